import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { fileURLToPath } from 'node:url';
import {
  loadPackManifest,
  packwardenHome,
  readPackwardenEnv,
  readPackwardenFlag,
  resolvePack,
} from '@packwarden/pack-manifest';
import {
  connectRunner,
  type QuestionAnswer,
  type QuestionFrame,
  type RunOutcome,
  type WelcomeFrame,
} from '@packwarden/runner-host';
import { CliError, EXIT } from '../errors.js';
import type { CliIo } from '../io.js';
import { VERSION } from '../version.js';
import type { RunFlags } from './sandbox.js';
import { humanRenderer, jsonRenderer } from './run-render.js';

/** Exit code of a cancelled turn, as for a process ended by SIGINT. */
const EXIT_CANCELLED = 130;

/** The variables the sandbox child inherits: locale, PATH, and the trust-root configuration. */
const INHERITED =
  /^(PATH|LANG|LC_[A-Z]+|TZ|TERM|SYSTEMROOT|NODE_EXTRA_CA_CERTS|(PACKWARDEN|AGENTHIPPO)_(PACK_[A-Z_]+|LEASE_URL))$/;

function childEnv(env: CliIo['env']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env))
    if (value !== undefined && INHERITED.test(key)) out[key] = value;
  return out;
}

/** The CLI's own entry point, to start `sandbox` with: next to this chunk in the build. */
function cliBin(): string {
  const bundled = fileURLToPath(new URL('./bin.js', import.meta.url));
  if (existsSync(bundled)) return bundled;
  const fromSource = fileURLToPath(new URL('../../dist/bin.js', import.meta.url));
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

async function ask(frame: QuestionFrame, signal: AbortSignal): Promise<QuestionAnswer> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const choices = frame.options?.length ? ` [${frame.options.join(' / ')}]` : '';
    const reply = (await rl.question(`? ${frame.prompt}${choices} `, { signal })).trim();
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
 * `packwarden run <pack> "<message>"`: starts `packwarden sandbox --stdio` as a child, runs one
 * turn, shows it, and exits with its outcome. The model token travels only in the run frame.
 */
export async function runPack(
  io: CliIo,
  ref: string,
  message: string,
  flags: RunFlags,
): Promise<number> {
  const resolved = await resolvePack(ref, { cwd: io.cwd, env: io.env });
  const { manifest } = loadPackManifest(resolved.dir);
  const stateDir =
    flags.stateDir !== undefined
      ? resolve(io.cwd, flags.stateDir)
      : join(packwardenHome(io.env), 'sandbox', manifest.metadata.name);
  const workspace =
    flags.workspace !== undefined ? resolve(io.cwd, flags.workspace) : join(stateDir, 'workspace');
  const baseUrl = flags.baseUrl ?? readPackwardenEnv(io.env, 'BASE_URL');
  const modelToken = flags.modelToken ?? readPackwardenEnv(io.env, 'MODEL_TOKEN');
  const requireSigned =
    flags.requireSignedPack === true || readPackwardenFlag(io.env, 'REQUIRE_SIGNED_PACK');

  const args = [
    cliBin(),
    'sandbox',
    '--agent',
    resolved.dir,
    '--stdio',
    '--state-dir',
    stateDir,
    '--workspace',
    workspace,
    ...(requireSigned ? ['--require-signed-pack'] : []),
    ...trustArgs(flags, io.cwd),
  ];
  // Detached: Ctrl-C reaches only us, and we turn it into a cancel frame.
  const child = spawn(process.execPath, args, {
    cwd: io.cwd,
    env: childEnv(io.env),
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  const exited = new Promise<number>((done) => {
    child.once('error', () => done(EXIT.failure));
    child.once('exit', (code, signal) => done(code ?? (signal !== null ? EXIT.failure : 0)));
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => io.stderr.write(chunk));
  const client = connectRunner({
    input: child.stdout,
    output: child.stdin,
    client: { name: 'packwarden run', version: VERSION },
    capabilities: { questions: true },
  });
  child.once('error', () => client.close());

  let welcome: WelcomeFrame;
  try {
    welcome = await client.welcome;
  } catch {
    // The sandbox did not boot; its stderr (forwarded above) says why.
    const code = await exited;
    return code === 0 ? EXIT.failure : code;
  }
  const render = flags.json === true ? jsonRenderer(io) : humanRenderer(io);
  render.welcome(welcome);

  const controller = new AbortController();
  let interrupts = 0;
  const onSigint = () => {
    interrupts += 1;
    if (interrupts === 1) {
      if (flags.json !== true)
        io.stderr.write('\ncancelling… (Ctrl-C again to stop the sandbox)\n');
      controller.abort();
    } else {
      child.kill('SIGKILL');
    }
  };
  process.on('SIGINT', onSigint);
  const interactive =
    io.stdout.isTTY === true && process.stdin.isTTY === true && flags.json !== true;

  let outcome: RunOutcome;
  try {
    const handle = client.run(
      {
        message,
        ...(baseUrl !== undefined ? { baseUrl } : {}),
        ...(modelToken !== undefined ? { modelToken } : {}),
        ...(flags.model !== undefined ? { modelId: flags.model } : {}),
        ...(flags.fileAccess !== undefined
          ? { permissions: { fileAccess: flags.fileAccess } }
          : {}),
      },
      {
        signal: controller.signal,
        onEvent: (event) => render.event(event),
        onQuestion: async (frame, { signal }) => {
          if (!interactive) {
            render.question(frame, 'declined (not a terminal)');
            return { decline: true };
          }
          const answer = await ask(frame, signal);
          render.question(
            frame,
            'decline' in answer
              ? 'declined'
              : (answer.selected?.join(', ') ?? answer.freeText ?? ''),
          );
          return answer;
        },
      },
    );
    outcome = await handle.outcome;
    render.end(outcome, workspace);
    await client.shutdown();
  } finally {
    process.off('SIGINT', onSigint);
  }
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
  if (outcome.type === 'failed') return EXIT.failure;
  return outcome.stopReason === 'end_turn' ? EXIT.ok : EXIT_CANCELLED;
}
