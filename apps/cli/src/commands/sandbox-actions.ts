import { lstat, unlink, chmod } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { loadPackEngine, type EngineRuntime, type PackEngine } from '@packwarden/engines';
import { loadPackManifest, readPackwardenFlag, resolvePack } from '@packwarden/pack-manifest';
import {
  describePackRefusal,
  PACK_VERIFICATION_EXIT_CODES,
  verifyPack,
} from '@packwarden/pack-signature';
import {
  SecretSet,
  startRunnerHost,
  type RunnerHostLogEntry,
  type RunnerHostOptions,
} from '@packwarden/runner-host';
import { selectTrustedKey } from '@packwarden/trust-root';
import { CliError, EXIT } from '../errors.js';
import type { CliIo } from '../io.js';
import { VERSION } from '../version.js';
import type { SandboxFlags } from './sandbox.js';
import { sessionEngine } from './sandbox-engine.js';
import { replaceWithCopy } from './sandbox-pack.js';
import { prepareSandboxState, takeOverStdio, type SandboxState } from './sandbox-process.js';
import { loadTrustRootOrExit } from './verify-actions.js';

function log(level: string, message: string): void {
  process.stderr.write(`packwarden sandbox: ${level}: ${message}\n`);
}

function describe(reason: unknown): string {
  return reason instanceof Error ? (reason.stack ?? reason.message) : String(reason);
}

function positiveInteger(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0)
    throw new CliError(`${name} must be a non-negative integer`, EXIT.usage);
  return number;
}

interface BootedPack {
  packDir: string;
  engine: PackEngine;
}

/** Finds, (verifies,) syncs and loads the pack. Every failure here is a boot failure. */
async function bootPack(
  io: CliIo,
  flags: SandboxFlags,
  state: SandboxState,
  cancelGraceMs: number,
): Promise<BootedPack> {
  const resolved = await resolvePack(flags.agent, { cwd: io.cwd, env: process.env });
  const requireSigned =
    flags.requireSignedPack === true || readPackwardenFlag(io.env, 'REQUIRE_SIGNED_PACK');
  let packDir = resolved.dir;
  if (requireSigned) {
    // Read the source once: copy it, then verify and use only the copy.
    packDir = join(state.stateDir, 'pack');
    await replaceWithCopy(resolved.dir, packDir);
    const root = await loadTrustRootOrExit(io, flags);
    const result = await verifyPack(packDir, {
      selectKey: (kid, at) => selectTrustedKey(root, kid, { at }),
    });
    if (result.kind !== 'verified') {
      throw new CliError(
        `the pack's signature was refused (${result.kind}): ${result.message.split('\n')[0]}`,
        PACK_VERIFICATION_EXIT_CODES[result.kind],
        describePackRefusal(result).fix,
      );
    }
    log('info', `verified ${result.pack}@${result.packVersion}, signed by ${result.kid}`);
  }
  const { manifest } = loadPackManifest(packDir);
  await replaceWithCopy(
    packDir,
    join(state.workspace, '.packwarden', 'agents', manifest.metadata.name),
  );
  const engine = await loadPackEngine({
    packDir,
    manifest,
    home: state.packwardenHome,
    // An exec command that ignores SIGTERM is killed well before the host gives up on it.
    exec: { killGraceMs: Math.floor(cancelGraceMs / 2) },
  });
  return { packDir, engine };
}

/** Removes a stale socket left by a previous run; refuses to remove anything else. */
async function removeStaleSocket(path: string): Promise<void> {
  const info = await lstat(path).catch(() => undefined);
  if (info === undefined) return;
  if (!info.isSocket())
    throw new CliError(`refusing to replace ${path}: it exists and is not a socket`, EXIT.failure);
  await unlink(path);
}

async function listen(server: Server, path: string): Promise<void> {
  // 0660 from the start (umask), and chmod in case the umask was wider than ours.
  const previous = process.umask(0o117);
  try {
    await new Promise<void>((ok, fail) => {
      server.once('error', fail);
      server.listen(path, () => {
        server.off('error', fail);
        ok();
      });
    });
  } catch (cause) {
    throw new CliError(`cannot listen on ${path}: ${(cause as Error).message}`, EXIT.failure);
  } finally {
    process.umask(previous);
  }
  await chmod(path, 0o660);
}

/**
 * `packwarden sandbox`: this command owns its process (environment, working directory, stdout,
 * signal handlers), so it only runs as a command, never in-process.
 */
export async function sandbox(io: CliIo, flags: SandboxFlags): Promise<number> {
  if ((flags.socket === undefined) === (flags.stdio !== true))
    throw new CliError('give exactly one of --socket PATH and --stdio', EXIT.usage);
  if (io.stdout !== process.stdout)
    throw new CliError('packwarden sandbox owns its process: run it as a command', EXIT.usage);
  const cancelGraceMs = positiveInteger(flags.cancelGraceMs, '--cancel-grace-ms', 5000);

  const secrets = new SecretSet();
  const channel = takeOverStdio(secrets);
  const state = await prepareSandboxState(
    resolve(io.cwd, flags.stateDir ?? '/state'),
    flags.workspace === undefined ? undefined : resolve(io.cwd, flags.workspace),
    process.env,
  );
  const { engine } = await bootPack(io, flags, state, cancelGraceMs);
  process.chdir(state.workspace);

  // Booted: from here on the session outlives stray promise rejections, not broken invariants.
  process.on('unhandledRejection', (reason) =>
    log('error', `unhandled rejection (the session goes on): ${describe(reason)}`),
  );
  process.on('uncaughtException', (error) => {
    log('error', `uncaught exception, exiting: ${describe(error)}`);
    process.exit(EXIT.failure);
  });

  const runtime: EngineRuntime = { workspaceRoot: state.workspace, stateDir: state.stateDir };
  const hostOptions = (): Omit<RunnerHostOptions<EngineRuntime>, 'input' | 'output'> => ({
    engine: sessionEngine(engine, state.workspace, secrets),
    runtime,
    host: { name: 'packwarden sandbox', version: VERSION },
    cancelGraceMs,
    kill: (request) => engine.kill?.(request),
    logger: (entry: RunnerHostLogEntry) =>
      log(entry.level, `${entry.runId !== undefined ? `[${entry.runId}] ` : ''}${entry.message}`),
  });

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
  let server: Server | undefined;
  const stopAll = () => {
    if (stopping) return;
    stopping = true;
    log('info', 'closing');
    server?.close();
    for (const end of sessions) end();
  };
  process.once('SIGTERM', stopAll);
  process.once('SIGINT', stopAll);

  if (flags.stdio === true) {
    const { input } = sessionInput(process.stdin);
    const host = startRunnerHost({ ...hostOptions(), input, output: channel, endOutput: false });
    await host.done;
  } else {
    const path = resolve(io.cwd, flags.socket as string);
    await removeStaleSocket(path);
    const running = new Set<Promise<unknown>>();
    server = createServer({ allowHalfOpen: true }, (socket) => {
      socket.on('error', () => {});
      const { input, end } = sessionInput(socket);
      const done = startRunnerHost({ ...hostOptions(), input, output: socket }).done.then(() => {
        sessions.delete(end);
        running.delete(done);
        socket.destroy();
      });
      running.add(done);
      if (stopping) end();
    });
    await listen(server, path);
    log('info', `listening on ${path}`);
    await new Promise<void>((closed) => server?.once('close', closed));
    await Promise.allSettled([...running]);
  }
  await Promise.resolve(engine.dispose?.()).catch((error: unknown) =>
    log('warn', `dispose of engine ${engine.id} failed: ${describe(error)}`),
  );
  // The session is over and its output flushed; engines may have left timers or handles behind.
  process.exit(EXIT.ok);
}
