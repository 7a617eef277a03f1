import { realpath } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { PassThrough, type Writable } from 'node:stream';
import type { EngineRuntime } from '@packwarden/engines';
import { readPackwardenFlag, terminalSafe } from '@packwarden/pack-manifest';
import {
  SecretSet,
  serveRunnerSocket,
  startRunnerHost,
  type RunnerSocketServer,
  type PeerInfo,
  type RunnerHostLogEntry,
  type RunnerHostOptions,
} from '@packwarden/runner-host';
import { loadPackTrustRoot, type PackTrustRoot } from '@packwarden/trust-root';
import { bootPack, type BootedPack, type SandboxLogger } from './boot.js';
import { confineSandbox, GATEWAY_ENGINES, ISOLATION_MODES } from './confine.js';
import { VERIFIED_ENGINES_DIR } from './engine-admission.js';
import type { IsolationMode } from './isolation/index.js';
import { probeIsolation } from './isolation/probe.js';
import { engineEnvironment, pruneEnvironment } from './engine-env.js';
import { SandboxError } from './errors.js';
import { modelOriginLease } from './model-origin.js';
import { sessionEngine } from './session-engine.js';
import { applyStateEnvironment, createSandboxState, type SandboxState } from './state.js';
import { takeOverStdio } from './stdio.js';

export interface ServeSandboxOptions {
  /** A pack folder, or the name of a pack installed in the sandbox's PACKWARDEN_HOME or `./.packwarden/agents/`. */
  agent: string;
  /** `stdio`: one session on stdin/stdout. `socket`: a unix socket (mode 0660), one session per connection. */
  transport: { kind: 'stdio' } | { kind: 'socket'; path: string };
  /** All writable state. Required (the CLI's default is `/state`). */
  stateDir: string;
  /** The workspace engines work in. Default `<stateDir>/workspace`. */
  workspace?: string;
  /** Relative paths resolve here. Default `process.cwd()`. */
  cwd?: string;
  /**
   * Copy the pack into `<state>/pack`, verify that copy, and load and sync only it. Default: the
   * environment's `PACKWARDEN_REQUIRE_SIGNED_PACK` (read by `readPackwardenFlag`).
   */
  requireSignedPack?: boolean;
  /**
   * The trust root for a required signature; called once, only then. Default: the environment's
   * trust-root variables with no disk cache. Supply one with `cacheDir: false` too: a cache under
   * the state dir is writable by pack code (docs/sandbox.md, "Trust root").
   */
  trustRoot?: () => Promise<PackTrustRoot>;
  /** How long a cancelled engine may take before it is killed. Default 5000 ms. */
  cancelGraceMs?: number;
  /** Who answers `hello`. */
  host?: PeerInfo;
  /**
   * Diagnostics (boot, sessions, the host's log). Default: none. Each message is one line: its
   * control characters, line breaks included, arrive as visible escapes (`\x1b`, `\n`), since
   * much of it is pack code's. Lines written here are not scrubbed; stderr is.
   */
  log?: SandboxLogger;
  /** Aborting it closes gracefully: active runs end `cancelled`, each session gets `bye`. */
  signal?: AbortSignal;
  /**
   * Confinement of every engine child (docs/sandbox.md, "Confinement"): `required` refuses boot
   * with `ERR_ISOLATION_UNAVAILABLE` when a guarantee cannot be enforced, `auto` confines what it
   * can and reports the rest once (`log` and a `warning{code:"isolation_degraded"}` per session),
   * `off` runs commands as given. Default `auto`.
   */
  isolation?: IsolationMode;
  /**
   * The `PACKWARDEN_HOME` whose `engines/<id>/` holds installed engines (`packwarden run` passes
   * the user's own). Default: the sandbox's `<state>/packwarden`. Under a required signature an
   * installed engine loads only from its verified copy in the state (docs/sandbox.md).
   */
  engineHome?: string;
  /** Called once the pack is booted (verified, synced, engine loaded), before any session. */
  onBooted?: (booted: BootedPack, state: SandboxState) => void;
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 0)
    throw new SandboxError('ERR_INVALID_OPTIONS', `${name} must be a non-negative integer`);
  return value;
}

/**
 * The frame socket must stay outside every folder pack code sees: confinement hides only the
 * sockets that exist when a command starts, a socket on a read-only bind mount still accepts
 * connections, and a connection can send a run frame whose model `baseUrl` widens the proxy's
 * allowed origins (docs/sandbox.md, "State").
 */
async function refuseExposedSocket(
  path: string,
  state: SandboxState,
  folders: readonly (readonly [label: string, folder: string])[],
): Promise<void> {
  let real: string;
  try {
    real = resolve(await realpath(dirname(path)), basename(path));
  } catch {
    // A missing parent folder is reported by the socket server itself (ERR_SOCKET).
    return;
  }
  for (const [label, folder] of folders) {
    const realFolder = await realpath(folder).catch(() => resolve(folder));
    if (real === realFolder || real.startsWith(realFolder + sep))
      throw new SandboxError(
        'ERR_SOCKET_EXPOSED',
        `the socket ${path} is inside ${label} (${realFolder}), where pack code could connect to it; put it elsewhere, e.g. ${resolve(state.stateDir, 'sandbox.sock')}`,
      );
  }
}

/** The folders confinement shows pack code read-only: the pack as it loads, its engine's. */
function readOnlyFolders(
  booted: BootedPack,
  state: SandboxState,
  engineHome: string | undefined,
): readonly (readonly [string, string])[] {
  return [
    ['the pack folder', booted.packDir],
    ['the engine folder', join(engineHome ?? state.packwardenHome, 'engines', booted.engine.id)],
    ['the verified engine folder', join(state.stateDir, VERIFIED_ENGINES_DIR, booted.engine.id)],
  ];
}

/**
 * The sandbox service (docs/sandbox.md): boots one pack and serves it behind the runner-host
 * protocol until the transport ends or `signal` aborts. It owns its process: it points
 * `process.env` at the state dir and prunes it to the engine allow-list, `chdir`s into the
 * workspace, and makes stdout the protocol's alone (other writes go to stderr, scrubbed).
 * Boot failures reject with their typed error before any pack code runs.
 */
export async function serveSandbox(options: ServeSandboxOptions): Promise<void> {
  const cwd = options.cwd ?? process.cwd();
  const env = process.env;
  const cancelGraceMs = positiveInteger(options.cancelGraceMs ?? 5000, 'cancelGraceMs');
  const sink: SandboxLogger = options.log ?? (() => {});
  // Engine messages and engine processes' output pass through here, much of it pack code's, to a
  // stderr `packwarden run` shows as it arrives: one line each, every control character shown as
  // a visible escape (`\x1b`, `\n`), so pack code can neither drive the terminal nor start a line
  // that reads like the sandbox's own.
  const log: SandboxLogger = (level, message) => sink(level, terminalSafe(message));
  const requireSigned = options.requireSignedPack ?? readPackwardenFlag(env, 'REQUIRE_SIGNED_PACK');
  // The trust root is read from the environment the sandbox was started with, before it is pruned.
  const trustEnv = { ...env };
  const trustRoot =
    options.trustRoot ?? (() => loadPackTrustRoot({ env: trustEnv, cacheDir: false }));

  const secrets = new SecretSet();
  const channel: Writable = takeOverStdio(secrets);
  const state = await createSandboxState(
    resolve(cwd, options.stateDir),
    options.workspace === undefined ? undefined : resolve(cwd, options.workspace),
  );
  applyStateEnvironment(env, state);
  if (options.transport.kind === 'socket')
    await refuseExposedSocket(resolve(cwd, options.transport.path), state, [
      ['the workspace', state.workspace],
      ['the engine state folder', state.engineDir],
    ]);
  const isolation = options.isolation ?? 'auto';
  const engineHome =
    options.engineHome === undefined ? undefined : resolve(cwd, options.engineHome);
  if (!ISOLATION_MODES.includes(isolation))
    throw new SandboxError('ERR_INVALID_OPTIONS', 'isolation must be required, auto or off');
  // What this machine can enforce is found by running bubblewrap (~20 ms): started now, it runs
  // while the pack is copied and verified; nothing of the pack reaches it, and the answer is
  // awaited where it always was, when the walls are built (issue 14, bench/boot).
  const probe = isolation === 'off' ? undefined : probeIsolation({ env: trustEnv });
  probe?.catch(() => undefined);
  const booted = await bootPack({
    agent: options.agent,
    cwd,
    env,
    state,
    requireSigned,
    trustRoot,
    engineEnv: engineEnvironment(env),
    execKillGraceMs: Math.floor(cancelGraceMs / 2),
    ...(engineHome !== undefined ? { engineHome } : {}),
    confine: ({ packDir, manifest }) =>
      confineSandbox(
        isolation,
        { packDir, manifest, state, ...(engineHome !== undefined ? { engineHome } : {}) },
        trustEnv,
        probe,
      ),
    onEngineLog: (level, message) => log(level, message),
    log,
  });
  if (booted.degraded !== undefined) log('warn', booted.degraded);
  else if (isolation === 'off') log('info', 'isolation is off: engine commands run unconfined');
  // From here on pack code may run: it sees only the allow-listed environment.
  pruneEnvironment(env);
  process.chdir(state.workspace);
  options.onBooted?.(booted, state);

  // Engines keep their own state (homes, sessions, CLI config) in `<state>/engine`, the one
  // state folder confinement lets pack code write.
  // One proxy per confinement, shared by every session: one model origin at a time.
  // claude and codex never reach the run's model server from inside: their host-side gateway
  // does, and the engine admits the gateway's origin itself for each turn (engineOptions).
  const confinement = booted.confinement;
  const modelOrigin =
    confinement !== undefined && !GATEWAY_ENGINES.has(booted.engine.id)
      ? modelOriginLease((origin) => confinement.admitOrigin(origin))
      : undefined;
  const runtime: EngineRuntime = { workspaceRoot: state.workspace, stateDir: state.engineDir };
  const hostOptions = (): Omit<RunnerHostOptions<EngineRuntime>, 'input' | 'output'> => {
    const engine = sessionEngine(
      booted.engine,
      () => booted.createEngine(),
      state.workspace,
      secrets,
      {
        ...(booted.degraded !== undefined ? { degraded: booted.degraded } : {}),
        ...(modelOrigin !== undefined ? { modelOrigin } : {}),
      },
    );
    return {
      engine,
      runtime,
      host: options.host ?? { name: 'packwarden sandbox', version: '0' },
      cancelGraceMs,
      kill: (request) => engine.kill(request),
      logger: (entry: RunnerHostLogEntry) =>
        log(entry.level, `${entry.runId !== undefined ? `[${entry.runId}] ` : ''}${entry.message}`),
    };
  };

  // Each session reads through its own stream, so that closing can end it like an EOF would:
  // the host then cancels the active run, says `bye` and flushes.
  const sessions = new Set<() => void>();
  const sessionInput = (source: NodeJS.ReadableStream) => {
    const input = new PassThrough();
    source.pipe(input);
    const end = () => {
      source.unpipe(input);
      input.end();
    };
    sessions.add(end);
    return { input, end };
  };
  let stopping = false;
  let closeSocket: (() => void) | undefined;
  const stopAll = () => {
    if (stopping) return;
    stopping = true;
    log('info', 'closing');
    closeSocket?.();
    for (const end of sessions) end();
  };
  if (options.signal?.aborted === true) stopAll();
  options.signal?.addEventListener('abort', stopAll, { once: true });

  try {
    if (options.transport.kind === 'stdio') {
      const { input } = sessionInput(process.stdin);
      const host = startRunnerHost({ ...hostOptions(), input, output: channel, endOutput: false });
      await host.done;
    } else {
      const path = resolve(cwd, options.transport.path);
      // Known once the pack is booted (and before any pack code runs): the pack and engine
      // folders, which the walls show read-only.
      await refuseExposedSocket(path, state, readOnlyFolders(booted, state, engineHome));
      // runner-host's socket server: a live socket of another sandbox is never taken over, a
      // stale one is removed, connections and their buffered input are bounded, and on close
      // only our own socket file is removed (docs/sandbox.md, "Socket mode").
      let socketServer: RunnerSocketServer;
      try {
        socketServer = await serveRunnerSocket(path, { session: hostOptions });
      } catch (cause) {
        throw new SandboxError(
          'ERR_SOCKET',
          `cannot listen on ${path}: ${(cause as Error).message}`,
          { cause },
        );
      }
      log('info', `listening on ${path}`);
      await new Promise<void>((stopped) => {
        if (stopping) stopped();
        else closeSocket = stopped;
      });
      await socketServer.close();
    }
  } finally {
    options.signal?.removeEventListener('abort', stopAll);
    await booted.confinement?.close();
  }
}
