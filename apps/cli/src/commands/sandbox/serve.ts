import { resolve } from 'node:path';
import { describePackRefusal, PACK_VERIFICATION_EXIT_CODES } from '@packwarden/pack-signature';
import { isSandboxError, runDoctor, serveSandbox } from '@packwarden/sandbox';
import { CliError, EXIT } from '../../errors.js';
import { printJson, terminalSafe, type CliIo } from '../../io.js';
import {
  loadTrustRootOrExit,
  refuseUncheckedTrustFlags,
  requireSignedFrom,
} from '../../shared/trust.js';
import { VERSION } from '../../version.js';
import { isolationMode } from './flags.js';
import type { SandboxFlags } from './flags.js';

// Log messages quote what pack code and engines said (an uncaught exception's message and stack
// too): one line each, shown, never obeyed by the terminal `packwarden run` passes them to.
function log(level: string, message: string): void {
  process.stderr.write(`packwarden sandbox: ${level}: ${terminalSafe(message)}\n`);
}

function describe(reason: unknown): string {
  return reason instanceof Error ? (reason.stack ?? reason.message) : String(reason);
}

function nonNegativeInteger(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0)
    throw new CliError(`${name} must be a non-negative integer`, EXIT.usage);
  return number;
}

/** Exit code when isolation is required and a guarantee cannot be enforced (docs/sandbox.md). */
export const EXIT_ISOLATION_UNAVAILABLE = 8;

/** Library errors of the sandbox that end with another exit code than 1. */
function exitFor(error: unknown): never {
  if (isSandboxError(error) && error.code === 'ERR_ISOLATION_UNAVAILABLE') {
    throw new CliError(
      error.message,
      EXIT_ISOLATION_UNAVAILABLE,
      'run "packwarden sandbox doctor" to see which guarantee fails and why; --isolation auto runs with what can be enforced',
    );
  }
  if (isSandboxError(error) && error.code === 'ERR_SIGNATURE_REFUSED' && error.verification) {
    const verification = error.verification;
    throw new CliError(
      error.message,
      PACK_VERIFICATION_EXIT_CODES[verification.kind],
      describePackRefusal(verification).fix,
    );
  }
  throw error;
}

/**
 * `packwarden sandbox`: flags in, `serveSandbox` (@packwarden/sandbox) does the work. It owns its
 * process (environment, working directory, stdout, signal handlers), so it only runs as a
 * command, never in-process.
 */
export async function sandbox(io: CliIo, flags: SandboxFlags): Promise<number> {
  if (flags.agent === undefined)
    throw new CliError("required option '--agent <pack>' not specified", EXIT.usage);
  if ((flags.socket === undefined) === (flags.stdio !== true))
    throw new CliError('give exactly one of --socket PATH and --stdio', EXIT.usage);
  if (io.stdout !== process.stdout)
    throw new CliError('packwarden sandbox owns its process: run it as a command', EXIT.usage);
  const cancelGraceMs = nonNegativeInteger(flags.cancelGraceMs, '--cancel-grace-ms', 5000);
  const requireSigned = await requireSignedFrom(io, flags.requireSignedPack);
  refuseUncheckedTrustFlags(flags, requireSigned);
  const isolation = isolationMode(io, flags.isolation);
  // The trust root is read from the environment the sandbox started with, and never cached on
  // disk: the state dir is writable by pack code (docs/sandbox.md, "Trust root").
  const startEnv = { ...io.env };
  const trustIo: CliIo = { ...io, env: startEnv };

  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  try {
    await serveSandbox({
      agent: flags.agent,
      transport:
        flags.stdio === true
          ? { kind: 'stdio' }
          : { kind: 'socket', path: resolve(io.cwd, flags.socket as string) },
      stateDir: flags.stateDir ?? '/state',
      ...(flags.workspace !== undefined ? { workspace: flags.workspace } : {}),
      ...(flags.engineHome !== undefined ? { engineHome: flags.engineHome } : {}),
      cwd: io.cwd,
      requireSignedPack: requireSigned,
      isolation,
      trustRoot: () => loadTrustRootOrExit(trustIo, flags, { cacheDir: false }),
      cancelGraceMs,
      host: { name: 'packwarden sandbox', version: VERSION },
      log,
      signal: controller.signal,
      onBooted: () => {
        // Booted: from here on the session outlives stray promise rejections, not broken invariants.
        process.on('unhandledRejection', (reason) =>
          log('error', `unhandled rejection (the session goes on): ${describe(reason)}`),
        );
        process.on('uncaughtException', (error) => {
          log('error', `uncaught exception, exiting: ${describe(error)}`);
          process.exit(EXIT.failure);
        });
      },
    });
  } catch (error) {
    exitFor(error);
  }
  // The session is over and its output flushed; engines may have left timers or handles behind.
  process.exit(EXIT.ok);
}

/** `packwarden sandbox doctor [--json]`: exit 0 when every guarantee is enforced, 8 otherwise. */
export async function sandboxDoctor(io: CliIo, flags: { json?: boolean }): Promise<number> {
  const report = await runDoctor({ env: io.env });
  const enforced = report.guarantees.every((guarantee) => guarantee.status === 'enforced');
  if (flags.json === true) {
    printJson(io, { ...report });
  } else {
    for (const guarantee of report.guarantees) {
      const detail =
        guarantee.status === 'enforced'
          ? guarantee.by !== undefined
            ? ` by ${guarantee.by}`
            : ''
          : guarantee.reason !== undefined
            ? `: ${guarantee.reason}`
            : '';
      io.stdout.write(`${guarantee.id.padEnd(10)} ${guarantee.status}${detail}\n`);
    }
    io.stdout.write(
      enforced
        ? 'every guarantee is enforced\n'
        : 'not every guarantee is enforced: --isolation required will refuse to run (exit 8)\n',
    );
  }
  return enforced ? EXIT.ok : EXIT_ISOLATION_UNAVAILABLE;
}
