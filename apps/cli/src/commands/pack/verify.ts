import { relative, resolve } from 'node:path';
import { findPackFolders, isPackManifestError } from '@packwarden/pack-manifest/resolve';
import {
  describePackRefusal,
  PACK_VERIFICATION_EXIT_CODES,
  verifyPacks,
  type PackBatchOutcome,
  type PackVerification,
} from '@packwarden/pack-signature';
import { selectTrustedKey } from '@packwarden/trust-root';
import { CliError, EXIT } from '../../errors.js';
import { printJson, terminalSafe as safe, type CliIo } from '../../io.js';
import { resolvePackArgument } from '../../shared/pack-argument.js';
import { loadTrustRootOrExit, requireSignedFrom, type TrustFlags } from '../../shared/trust.js';
import { formatVerifyRows, type VerifyRow } from './verify-rows.js';

export interface VerifyFlags extends TrustFlags {
  all?: string;
  requireSigned?: boolean;
  json?: boolean;
  /** Read by `--installed` only (verify-installed.ts); refused here rather than ignored. */
  lock?: string;
}

interface PackOutcome extends PackBatchOutcome {
  target: string;
}

function identity(result: PackVerification): string | undefined {
  const { pack, packVersion } = result as { pack?: string; packVersion?: string };
  return pack && packVersion ? `${pack}@${packVersion}` : undefined;
}

/**
 * The row of one pack (apps/cli/README.md "pack verify"): result word, identity, folder, message.
 * Identities, kids, folders and messages come from the pack: shown, never obeyed by the terminal.
 */
function row(outcome: PackOutcome, cwd: string): VerifyRow {
  const { result } = outcome;
  // The identity is shown only once the signature vouches for it.
  const vouched =
    result.kind === 'verified' || result.kind === 'digest-unsupported' || result.kind === 'invalid'
      ? identity(result)
      : undefined;
  const message =
    result.kind === 'verified'
      ? `signed by ${result.kid}`
      : result.kind === 'unsigned' && !outcome.failed
        ? 'allowed: --require-signed not given'
        : result.message;
  return {
    kind: result.kind,
    pack: vouched ?? '-',
    folder: relative(cwd, outcome.dir) || '.',
    message,
  };
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

/** `pack verify --all DIR`: pack-manifest's finder, the one `store build` uses too. */
async function packFolders(io: CliIo, dir: string): Promise<string[]> {
  const root = resolve(io.cwd, dir);
  try {
    return await findPackFolders(root);
  } catch (error) {
    if (isPackManifestError(error) && error.code === 'ERR_MANIFEST_IO')
      throw new CliError(error.message, EXIT.usage, undefined, {
        code: 'ERR_CLI_USAGE',
        cause: error,
      });
    throw error;
  }
}

/**
 * `pack verify <pack>...` and `pack verify --all DIR`. The batch policy is pack-signature's
 * `verifyPacks`: one pack's exit code is its kind's (PACK_VERIFICATION_EXIT_CODES); several
 * packs give 0 when none failed, else the code of the first failure; unsigned packs fail a batch
 * only with --require-signed.
 */
export async function packVerify(io: CliIo, refs: string[], flags: VerifyFlags): Promise<number> {
  // Only --installed compares anything with a lockfile. Without it the lock would be dropped, and
  // a step written to catch drift from the lock would pass on signatures alone (in a batch, on
  // unsigned packs too): refused, as --installed refuses the flags it would ignore.
  if (flags.lock !== undefined) {
    throw new CliError(
      `--lock ${flags.lock} is read only with --installed: pack verify <packs…> | --all DIR checks signatures and would not compare anything with the lock`,
      EXIT.usage,
      'add --installed to compare installed packs with the lock (pack verify --installed --lock FILE), and check signatures in a step of its own',
    );
  }
  if (flags.all === undefined && refs.length === 0) {
    throw new CliError('name at least one pack, or --all DIR', EXIT.usage);
  }
  if (flags.all !== undefined && refs.length > 0) {
    throw new CliError('give packs or --all DIR, not both', EXIT.usage);
  }
  const targets =
    flags.all !== undefined
      ? (await packFolders(io, flags.all)).map((dir) => ({ target: dir, dir }))
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
  // One pack named alone fails when unsigned (exit 3); a batch passes unsigned packs unless
  // --require-signed or PACKWARDEN_REQUIRE_SIGNED_PACK, which every other command honours too.
  // The variable is read either way: a bad value is exit 2 here as in every command, never
  // a pass that the same environment's `run` or `store install` would refuse.
  const requiredBySetting = await requireSignedFrom(io, flags.requireSigned);
  const requireSigned = !batch || requiredBySetting;
  const root = await loadTrustRootOrExit(io, flags);
  const verified = await verifyPacks(
    targets.map((target) => target.dir),
    {
      selectKey: (kid: string, at: Date) => selectTrustedKey(root, kid, { at }),
      requireSigned,
    },
  );
  const outcomes: PackOutcome[] = verified.outcomes.map((outcome, index) => ({
    ...outcome,
    target: targets[index]!.target,
  }));
  const { summary, exitCode } = verified;

  if (flags.json) {
    printJson(io, {
      trustRoot: {
        source: root.source.kind,
        status: root.status,
        stale: root.status === 'ok' ? root.stale : false,
      },
      summary,
      exitCode,
      packs: outcomes.map((outcome) => toJson(outcome, io.cwd)),
    });
    return exitCode;
  }
  const lines = formatVerifyRows(outcomes.map((outcome) => row(outcome, io.cwd)));
  // A batch is a report on stdout; a single pack's refusal is an error on stderr.
  (verified.firstFailure && !batch ? io.stderr : io.stdout).write(lines);
  if (!batch && verified.firstFailure)
    io.stderr.write(`fix: ${safe(describePackRefusal(verified.firstFailure.result).fix)}\n`);
  if (batch) {
    io.stdout.write(
      `verified ${summary.verified}, unsigned ${summary.unsigned}, failed ${summary.failed}\n`,
    );
  }
  return exitCode;
}
