import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { fileURLToPath } from 'node:url';
import { readPackwardenEnv } from '@packwarden/pack-manifest';
import type { QuestionAnswer, QuestionFrame } from '@packwarden/runner-host';
import { PACK_VERIFICATION_EXIT_CODES } from '@packwarden/pack-signature';
import { runInSandbox } from '@packwarden/sandbox';
import { CliError, EXIT } from '../../errors.js';
import { terminalSafe, type CliIo } from '../../io.js';
import { resolvePackArgument } from '../../shared/pack-argument.js';
import { refuseUncheckedTrustFlags, requireSignedFrom } from '../../shared/trust.js';
import { VERSION } from '../../version.js';
import { isolationMode, modelTokenFrom } from './flags.js';
import { EXIT_ISOLATION_UNAVAILABLE } from './serve.js';
import type { RunFlags } from './flags.js';
import { humanRenderer, jsonRenderer, type TurnRenderer } from './run-render.js';

/** Exit code of a cancelled turn, as for a process ended by SIGINT. */
const EXIT_CANCELLED = 130;

/** The CLI's own entry point, to start `sandbox` with: next to this chunk in the build. */
function cliBin(): string {
  const bundled = fileURLToPath(new URL('./bin.cjs', import.meta.url));
  if (existsSync(bundled)) return bundled;
  // Run from source (src/commands/sandbox/run.ts, in-process tests): the package's build.
  const fromSource = fileURLToPath(new URL('../../../dist/bin.cjs', import.meta.url));
  if (existsSync(fromSource)) return fromSource;
  throw new CliError(
    'cannot find the packwarden executable to start the sandbox with',
    EXIT.failure,
  );
}

function trustArgs(flags: RunFlags, cwd: string): string[] {
  const args: string[] = [];
  if (flags.keys !== undefined) args.push('--keys', resolve(cwd, flags.keys));
  if (flags.jwks !== undefined) args.push('--jwks', flags.jwks);
  for (const pin of flags.pin ?? []) args.push('--pin', pin);
  if (flags.leaseUrl !== undefined) args.push('--lease-url', flags.leaseUrl);
  return args;
}

/** What a sandbox exit code of 3–7 or 8 means (`packwarden sandbox --help`), for the error document. */
function refusedKind(exitCode: number): string {
  if (exitCode === EXIT_ISOLATION_UNAVAILABLE)
    return ': isolation is required and cannot be enforced';
  const kind = Object.entries(PACK_VERIFICATION_EXIT_CODES).find(
    ([, code]) => code === exitCode && code > EXIT.usage,
  )?.[0];
  return kind === undefined ? '' : `: the pack's signature was refused (${kind})`;
}

/**
 * The line a question is asked with. The prompt and its options come from the engine (pack code,
 * or the model): shown, never obeyed by the terminal, like everything else a turn prints.
 */
export function questionPrompt(frame: Pick<QuestionFrame, 'prompt' | 'options'>): string {
  const choices = frame.options?.length
    ? ` [${frame.options.map((option) => terminalSafe(option)).join(' / ')}]`
    : '';
  return `? ${terminalSafe(frame.prompt, { multiline: true })}${choices} `;
}

async function ask(frame: QuestionFrame, signal: AbortSignal): Promise<QuestionAnswer> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const reply = (await rl.question(questionPrompt(frame), { signal })).trim();
    if (reply === '') return { decline: true };
    if (frame.options?.includes(reply)) return { selected: [reply] };
    return { freeText: reply };
  } catch {
    return { decline: true };
  } finally {
    rl.close();
  }
}

/**
 * `packwarden run <pack> "<message>"`: flags in, `runInSandbox` (@packwarden/sandbox) starts
 * `packwarden sandbox --stdio` as a child and runs one turn; this shows it and maps the outcome
 * to an exit code. The model token travels only in the run frame.
 */
export async function runPack(
  io: CliIo,
  ref: string,
  message: string,
  flags: RunFlags,
): Promise<number> {
  const baseUrl = flags.baseUrl ?? readPackwardenEnv(io.env, 'BASE_URL');
  const requireSigned = await requireSignedFrom(io, flags.requireSignedPack);
  refuseUncheckedTrustFlags(flags, requireSigned);
  const isolation = isolationMode(io, flags.isolation);
  // Named the way every pack command names it (a bare name that is both a folder here and an
  // installed pack is refused as ambiguous), and handed to the sandbox as that folder's path.
  const { dir } = await resolvePackArgument(io, ref);
  const modelToken = await modelTokenFrom(io, flags, readPackwardenEnv(io.env, 'MODEL_TOKEN'));

  const cancel = new AbortController();
  const kill = new AbortController();
  let interrupts = 0;
  const onSigint = () => {
    interrupts += 1;
    if (interrupts === 1) {
      if (flags.json !== true)
        io.stderr.write('\ncancelling… (Ctrl-C again to stop the sandbox)\n');
      cancel.abort();
    } else {
      kill.abort();
    }
  };
  const interactive =
    io.stdout.isTTY === true && process.stdin.isTTY === true && flags.json !== true;
  let render: TurnRenderer | undefined;
  process.on('SIGINT', onSigint);
  try {
    const result = await runInSandbox(dir, message, {
      command: { file: process.execPath, args: [cliBin(), 'sandbox'] },
      sandboxArgs: trustArgs(flags, io.cwd),
      cwd: io.cwd,
      env: io.env,
      ...(flags.stateDir !== undefined ? { stateDir: flags.stateDir } : {}),
      ...(flags.workspace !== undefined ? { workspace: flags.workspace } : {}),
      requireSignedPack: requireSigned,
      isolation,
      ...(baseUrl !== undefined ? { baseUrl } : {}),
      ...(modelToken !== undefined ? { modelToken } : {}),
      ...(flags.model !== undefined ? { modelId: flags.model } : {}),
      ...(flags.fileAccess !== undefined ? { fileAccess: flags.fileAccess } : {}),
      client: { name: 'packwarden run', version: VERSION },
      signal: cancel.signal,
      killSignal: kill.signal,
      // The sandbox's stderr carries engine (pack) output: shown, never obeyed by the terminal.
      onStderr: (chunk) => io.stderr.write(terminalSafe(chunk, { multiline: true })),
      onWelcome: (welcome) => {
        render = flags.json === true ? jsonRenderer(io) : humanRenderer(io);
        render.welcome(welcome);
      },
      onEvent: (event) => render?.event(event),
      onQuestion: async (frame, { signal }) => {
        if (!interactive) {
          render?.question(frame, 'declined (not a terminal)');
          return { decline: true };
        }
        const answer = await ask(frame, signal);
        render?.question(
          frame,
          'decline' in answer ? 'declined' : (answer.selected?.join(', ') ?? answer.freeText ?? ''),
        );
        return answer;
      },
    });
    // The sandbox did not boot; its stderr (forwarded above) says why. Under --json stdout still
    // ends with the error document every failure prints, its exit code the sandbox's.
    if (result.outcome === undefined) {
      if (flags.json !== true) return result.sandboxExitCode;
      throw new CliError(
        `the sandbox ended with exit code ${result.sandboxExitCode} before it served the turn${refusedKind(result.sandboxExitCode)}`,
        result.sandboxExitCode,
        'the sandbox says why on stderr (lines starting "packwarden")',
        { code: 'ERR_CLI_SANDBOX_BOOT' },
      );
    }
    render?.end(result.outcome, result.workspace);
    if (result.outcome.type === 'failed') return EXIT.failure;
    return result.outcome.stopReason === 'end_turn' ? EXIT.ok : EXIT_CANCELLED;
  } finally {
    process.off('SIGINT', onSigint);
  }
}
