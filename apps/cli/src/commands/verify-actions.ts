import { readdir } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import {
  describePackRefusal,
  PACK_VERIFICATION_EXIT_CODES,
  verifyPack,
  type PackVerification,
} from '@packwarden/pack-signature';
import { describeTrustRoot, selectTrustedKey, type PackTrustRoot } from '@packwarden/trust-root';
import { CliError, EXIT } from '../errors.js';
import { printJson, terminalSafe as safe, type CliIo } from '../io.js';
import { resolvePackArgument } from './pack-actions.js';
import { loadTrustRootFromFlags, type TrustFlags } from './trust-options.js';

export interface VerifyFlags extends TrustFlags {
  all?: string;
  requireSigned?: boolean;
  json?: boolean;
}

// A trust root that is unavailable because of its own configuration (a bad pin, an unreadable
// or malformed keys file, a plain-HTTP URL) is a config error (exit 2), not a retryable outage.
const CONFIG_CODES = new Set([
  'ERR_INVALID_OPTIONS',
  'ERR_URL_INVALID',
  'ERR_URL_INSECURE',
  'ERR_PIN_INVALID',
  'ERR_DURATION_INVALID',
  'ERR_KEYS_FILE_READ',
  'ERR_KEYS_TOO_LARGE',
  'ERR_KEYS_PARSE',
  'ERR_TOO_MANY_KEYS',
  'ERR_KEY_INVALID',
]);

export async function loadTrustRootOrExit(
  io: CliIo,
  flags: TrustFlags,
  overrides: { cacheDir?: string | false } = {},
): Promise<PackTrustRoot> {
  const root = await loadTrustRootFromFlags(io, flags, overrides);
  if (root.status === 'unavailable' && CONFIG_CODES.has(root.code)) {
    throw new CliError(
      `the trust root is misconfigured: ${root.reason}`,
      EXIT.usage,
      'check --keys / --jwks / --pin and the PACKWARDEN_* variables',
      { code: 'ERR_CLI_TRUST_CONFIG' },
    );
  }
  for (const warning of root.warnings) io.stderr.write(`warning: ${safe(warning)}\n`);
  return root;
}

interface PackOutcome {
  target: string;
  dir: string;
  result: PackVerification;
  /** Whether this outcome fails the run. */
  failed: boolean;
}

/** One pack folder per directory holding agent.yaml, not descending into packs, bounded. */
async function findPackFolders(root: string, maxDepth = 8, maxPacks = 10_000): Promise<string[]> {
  const found: string[] = [];
  const visit = async (dir: string, depth: number): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (cause) {
      if (depth === 0)
        throw new CliError(
          `cannot read ${dir}: ${(cause as Error).message}`,
          EXIT.usage,
          undefined,
          {
            code: 'ERR_CLI_USAGE',
            cause,
          },
        );
      return;
    }
    if (entries.some((entry) => entry.name === 'agent.yaml' && entry.isFile())) {
      found.push(dir);
      return;
    }
    if (depth >= maxDepth) return;
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (found.length >= maxPacks) return;
      // Symlinked folders are not followed; VCS and dependency folders are not packs.
      if (entry.isDirectory() && entry.name !== '.git' && entry.name !== 'node_modules') {
        await visit(join(dir, entry.name), depth + 1);
      }
    }
  };
  await visit(root, 0);
  return found;
}

/**
 * One line per pack: kind, identity, the first line of the library's message, and always the
 * folder that was checked (a bare name may be an installed pack rather than a folder here).
 * Identities, kids and messages come from the pack: shown, never obeyed by the terminal.
 */
function summaryLine(outcome: PackOutcome, cwd: string): string {
  const { result } = outcome;
  const where = safe(relative(cwd, outcome.dir) || '.');
  // The identity is shown only once the signature vouches for it.
  const vouched =
    result.kind === 'verified' || result.kind === 'digest-unsupported' || result.kind === 'invalid'
      ? identity(result)
      : undefined;
  const id = vouched === undefined ? where : safe(vouched);
  if (result.kind === 'verified')
    return `verified            ${id}  signed by ${safe(result.kid)}  (folder ${where})`;
  if (result.kind === 'unsigned' && !outcome.failed) {
    return `unsigned            ${where}  (allowed: --require-signed not given)`;
  }
  const message = safe(result.message.split('\n')[0] ?? '');
  return `${result.kind.padEnd(20)}${id}  ${message}${id === where ? '' : `  (folder ${where})`}`;
}

function identity(result: PackVerification): string | undefined {
  const { pack, packVersion } = result as { pack?: string; packVersion?: string };
  return pack && packVersion ? `${pack}@${packVersion}` : undefined;
}

function toJson(outcome: PackOutcome, cwd: string) {
  const { result } = outcome;
  return {
    target: outcome.target,
    dir: outcome.dir,
    relativeDir: relative(cwd, outcome.dir) || '.',
    kind: result.kind,
    exitCode: PACK_VERIFICATION_EXIT_CODES[result.kind],
    failed: outcome.failed,
    result,
    ...(result.kind === 'verified' ? {} : { refusal: describePackRefusal(result) }),
  };
}

/**
 * `pack verify <pack>...` and `pack verify --all DIR`. One pack: the exit code is its kind's (see
 * PACK_VERIFICATION_EXIT_CODES). Several packs: 0 when none failed, else the code of the first
 * failure; unsigned packs fail a batch only with --require-signed.
 */
export async function packVerify(io: CliIo, refs: string[], flags: VerifyFlags): Promise<number> {
  if (flags.all === undefined && refs.length === 0) {
    throw new CliError('name at least one pack, or --all DIR', EXIT.usage);
  }
  if (flags.all !== undefined && refs.length > 0) {
    throw new CliError('give packs or --all DIR, not both', EXIT.usage);
  }
  const targets =
    flags.all !== undefined
      ? (await findPackFolders(resolve(io.cwd, flags.all))).map((dir) => ({ target: dir, dir }))
      : await Promise.all(
          refs.map(async (ref) => ({ target: ref, dir: (await resolvePackArgument(io, ref)).dir })),
        );
  // A wrong path in CI must not pass as "nothing failed": no pack found is a failure.
  if (targets.length === 0) {
    throw new CliError(
      `no pack folder (a folder holding agent.yaml) under ${resolve(io.cwd, flags.all ?? '.')}: nothing was verified`,
      EXIT.failure,
      'check the path given to --all (packs-dir in the GitHub Action)',
      { code: 'ERR_CLI_NO_PACKS' },
    );
  }
  const batch = flags.all !== undefined || refs.length > 1;
  const root = await loadTrustRootOrExit(io, flags);
  const selectKey = (kid: string, at: Date) => selectTrustedKey(root, kid, { at });

  const outcomes: PackOutcome[] = [];
  for (const { target, dir } of targets) {
    const result = await verifyPack(dir, { selectKey });
    const failed =
      result.kind !== 'verified' &&
      (result.kind !== 'unsigned' || !batch || flags.requireSigned === true);
    const outcome = { target, dir, result, failed };
    outcomes.push(outcome);
    // A batch is a report on stdout; a single pack's refusal is an error on stderr.
    if (!flags.json)
      (failed && !batch ? io.stderr : io.stdout).write(`${summaryLine(outcome, io.cwd)}\n`);
  }

  const count = (predicate: (outcome: PackOutcome) => boolean) => outcomes.filter(predicate).length;
  const verified = count((outcome) => outcome.result.kind === 'verified');
  const unsigned = count((outcome) => outcome.result.kind === 'unsigned');
  const failedCount = count((outcome) => outcome.failed);
  const firstFailure = outcomes.find((outcome) => outcome.failed);
  const exitCode = firstFailure ? PACK_VERIFICATION_EXIT_CODES[firstFailure.result.kind] : EXIT.ok;

  if (flags.json) {
    printJson(io, {
      trustRoot: {
        source: root.source.kind,
        status: root.status,
        stale: root.status === 'ok' ? root.stale : false,
      },
      summary: { verified, unsigned, failed: failedCount, total: outcomes.length },
      exitCode,
      packs: outcomes.map((outcome) => toJson(outcome, io.cwd)),
    });
    return exitCode;
  }
  if (!batch && firstFailure)
    io.stderr.write(`fix: ${safe(describePackRefusal(firstFailure.result).fix)}\n`);
  if (batch) {
    io.stdout.write(`verified ${verified}, unsigned ${unsigned}, failed ${failedCount}\n`);
  }
  return exitCode;
}

export async function trustShow(
  io: CliIo,
  flags: TrustFlags & { json?: boolean },
): Promise<number> {
  const root = await loadTrustRootFromFlags(io, flags);
  const description = describeTrustRoot(root);
  if (flags.json) {
    printJson(io, { trustRoot: description });
    return root.status === 'ok' ? EXIT.ok : root.status === 'none' ? 5 : 6;
  }
  // Key ids, reasons and warnings come from keys files and key servers: shown, never obeyed.
  const lines = [
    `source:  ${description.source.kind}`,
    `status:  ${description.status}${description.stale ? ' (stale cached copy)' : ''}`,
  ];
  if (description.reason) lines.push(`reason:  ${safe(description.reason)}`);
  if (description.fetchedAt) lines.push(`fetched: ${description.fetchedAt}`);
  lines.push(`keys:    ${description.keys.length}`);
  for (const key of description.keys) {
    const window = [
      key.notBefore ? `from ${key.notBefore}` : '',
      key.notAfter ? `until ${key.notAfter}` : '',
    ]
      .filter(Boolean)
      .join(' ');
    lines.push(
      `  ${safe(key.kid)}  ${safe(key.thumbprint)}${window ? `  ${safe(window)}` : ''}${key.revoked ? '  REVOKED' : ''}`,
    );
  }
  for (const rejected of description.rejectedKeys)
    lines.push(`  rejected ${safe(rejected.kid ?? '(no kid)')}: ${safe(rejected.message)}`);
  for (const warning of description.warnings) lines.push(`warning: ${safe(warning)}`);
  io.stdout.write(`${lines.join('\n')}\n`);
  return root.status === 'ok' ? EXIT.ok : root.status === 'none' ? 5 : 6;
}
