import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  loadPackManifest,
  packwardenHome,
  readPackwardenFlag,
  resolvePack,
} from '@packwarden/pack-manifest';
import {
  connectRunner,
  type FileAccess,
  type PeerInfo,
  type RunEvent,
  type RunOptions,
  type RunOutcome,
  type WelcomeFrame,
} from '@packwarden/runner-host';
import { SandboxError } from './errors.js';
import type { IsolationMode } from './isolation/index.js';
import { SANDBOX_LIMITS } from './limits.js';

type Env = Record<string, string | undefined>;

/**
 * The variables the sandbox child inherits: locale, PATH, and the trust-root configuration
 * (docs/sandbox.md, "From your terminal"). Never a model credential: those travel in the run frame.
 */
const INHERITED =
  /^(PATH|LANG|LC_[A-Z]+|TZ|TERM|SYSTEMROOT|NODE_EXTRA_CA_CERTS|(PACKWARDEN|AGENTHIPPO)_(PACK_[A-Z_]+|LEASE_URL))$/;

/** The environment `runInSandbox` starts the sandbox with. */
export function sandboxChildEnvironment(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env))
    if (value !== undefined && INHERITED.test(key)) out[key] = value;
  return out;
}

/**
 * The default state folder of `run`: one per pack identity (the pack's real folder, and whether a
 * signature is required), `$PACKWARDEN_HOME/sandbox/<name>-<12 hex>`. Another pack of the same
 * name, or the same folder run without a signature, never shares state with a signed run, so it
 * cannot plant anything that run loads (docs/sandbox.md, "What may load").
 */
export function defaultRunStateDir(
  packDir: string,
  name: string,
  options: { requireSigned: boolean; env: Env },
): string {
  let real = packDir;
  try {
    real = realpathSync(packDir);
  } catch {
    // A folder that vanished fails at boot; the name only needs to be stable.
  }
  const identity = createHash('sha256')
    .update(`${real}\0${options.requireSigned ? 'signed' : 'unsigned'}`)
    .digest('hex')
    .slice(0, 12);
  return join(packwardenHome(options.env), 'sandbox', `${name}-${identity}`);
}

export interface RunInSandboxOptions {
  /**
   * How to start `packwarden sandbox`: the program and the arguments before the sandbox's own
   * flags (the CLI passes `node <bin.js> sandbox`). The driver appends `--agent`, `--stdio`,
   * `--state-dir`, `--workspace`, `--require-signed-pack` and `sandboxArgs`.
   */
  command: { file: string; args: readonly string[] };
  /** Extra sandbox flags, e.g. the trust-root flags. */
  sandboxArgs?: readonly string[];
  /** Relative paths resolve here. Default `process.cwd()`. */
  cwd?: string;
  /** Pack names, PACKWARDEN_HOME and the inherited variables come from here. Default `process.env`. */
  env?: Env;
  /** Default {@link defaultRunStateDir}. */
  stateDir?: string;
  /** Default `<stateDir>/workspace`. */
  workspace?: string;
  /** Default `PACKWARDEN_REQUIRE_SIGNED_PACK` of `env`. */
  requireSignedPack?: boolean;
  /** Passed to the sandbox as `--isolation`; absent: the sandbox's default (`auto`). */
  isolation?: IsolationMode;
  /** The model route and id of the turn: sent only in the run frame. */
  baseUrl?: string;
  modelToken?: string;
  modelId?: string;
  /** Narrows the pack's file access for this turn. */
  fileAccess?: FileAccess;
  client?: PeerInfo;
  /** Aborting cancels the turn (`cancel` frame). */
  signal?: AbortSignal;
  /** Aborting kills the sandbox (SIGKILL). */
  killSignal?: AbortSignal;
  onWelcome?: (frame: WelcomeFrame) => void;
  onEvent?: (event: RunEvent) => void;
  onQuestion?: RunOptions['onQuestion'];
  /** The sandbox's stderr (its boot failures and log), as it arrives. */
  onStderr?: (chunk: string) => void;
}

export interface RunInSandboxResult {
  /** The turn's terminal frame; absent when the sandbox did not boot (its stderr says why). */
  outcome?: RunOutcome;
  /** The sandbox process's exit code (1 when it ended by a signal). */
  sandboxExitCode: number;
  stateDir: string;
  workspace: string;
}

/**
 * The `run` driver: starts the sandbox as a child speaking the protocol on stdio, runs one turn,
 * and shuts it down. The model token goes only into the run frame: the child's argv and
 * environment never hold it.
 */
export async function runInSandbox(
  pack: string,
  message: string,
  options: RunInSandboxOptions,
): Promise<RunInSandboxResult> {
  if (typeof options?.command?.file !== 'string' || !Array.isArray(options.command.args))
    throw new SandboxError('ERR_INVALID_OPTIONS', 'command must be { file, args }');
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  const resolved = await resolvePack(pack, { cwd, env });
  const { manifest } = loadPackManifest(resolved.dir);
  const requireSigned = options.requireSignedPack ?? readPackwardenFlag(env, 'REQUIRE_SIGNED_PACK');
  const stateDir =
    options.stateDir !== undefined
      ? resolve(cwd, options.stateDir)
      : defaultRunStateDir(resolved.dir, manifest.metadata.name, { requireSigned, env });
  const workspace =
    options.workspace !== undefined ? resolve(cwd, options.workspace) : join(stateDir, 'workspace');
  let engineHome: string | undefined;
  try {
    engineHome = packwardenHome(env);
  } catch {
    // No usable home (HOME unset or relative): the sandbox looks only in its own state.
  }

  const args = [
    ...options.command.args,
    '--agent',
    resolved.dir,
    '--stdio',
    '--state-dir',
    stateDir,
    '--workspace',
    workspace,
    ...(requireSigned ? ['--require-signed-pack'] : []),
    ...(options.isolation !== undefined ? ['--isolation', options.isolation] : []),
    // Engines installed with `store install engine/<id>` live in the user's PACKWARDEN_HOME, not
    // in the sandbox's own state (under a required signature they load from a verified copy).
    ...(engineHome !== undefined ? ['--engine-home', engineHome] : []),
    ...(options.sandboxArgs ?? []),
  ];
  // Detached: a terminal's Ctrl-C reaches only the driver, which turns it into a cancel frame.
  const child = spawn(options.command.file, args, {
    cwd,
    env: sandboxChildEnvironment(env),
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  let startError: Error | undefined;
  const exited = new Promise<number>((done) => {
    child.once('error', (error) => {
      startError = error;
      done(1);
    });
    child.once('exit', (code, signal) => done(code ?? (signal !== null ? 1 : 0)));
  });
  const kill = () => child.kill('SIGKILL');
  options.killSignal?.addEventListener('abort', kill, { once: true });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => options.onStderr?.(chunk));
  const client = connectRunner({
    input: child.stdout,
    output: child.stdin,
    client: options.client ?? { name: '@packwarden/sandbox run' },
    capabilities: { questions: true },
  });
  child.once('error', () => client.close());

  try {
    let welcome: WelcomeFrame;
    try {
      welcome = await client.welcome;
    } catch {
      const code = await exited;
      if (startError !== undefined) {
        throw new SandboxError(
          'ERR_SANDBOX_START',
          `cannot start the sandbox (${options.command.file}): ${startError.message}`,
          { cause: startError },
        );
      }
      return { sandboxExitCode: code === 0 ? 1 : code, stateDir, workspace };
    }
    options.onWelcome?.(welcome);
    const handle = client.run(
      {
        message,
        ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}),
        ...(options.modelToken !== undefined ? { modelToken: options.modelToken } : {}),
        ...(options.modelId !== undefined ? { modelId: options.modelId } : {}),
        ...(options.fileAccess !== undefined
          ? { permissions: { fileAccess: options.fileAccess } }
          : {}),
      },
      {
        ...(options.signal !== undefined ? { signal: options.signal } : {}),
        onEvent: (event) => options.onEvent?.(event),
        ...(options.onQuestion !== undefined ? { onQuestion: options.onQuestion } : {}),
      },
    );
    const outcome = await handle.outcome;
    await client.shutdown();
    const timer = setTimeout(kill, SANDBOX_LIMITS.exitTimeoutMs);
    const sandboxExitCode = await exited;
    clearTimeout(timer);
    return { outcome, sandboxExitCode, stateDir, workspace };
  } finally {
    options.killSignal?.removeEventListener('abort', kill);
  }
}
