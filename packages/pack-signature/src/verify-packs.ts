import { PACK_VERIFICATION_EXIT_CODES } from './exit-codes.js';
import type { PackVerification } from './results.js';
import { verifyPack, type VerifyPackOptions } from './verify.js';

export interface VerifyPacksOptions extends VerifyPackOptions {
  /**
   * Whether an unsigned pack fails the batch. Default `false`: a batch reports unsigned packs and
   * passes them, as `packwarden pack verify --all` does without `--require-signed`. Every other
   * kind but `verified` always fails.
   */
  requireSigned?: boolean;
  /** Called after each pack, in order, so a caller can report while the rest are checked. */
  onResult?: (outcome: PackBatchOutcome) => void;
}

export interface PackBatchOutcome {
  /** The folder verified, as given. */
  dir: string;
  result: PackVerification;
  /** Whether this pack fails the batch. */
  failed: boolean;
}

export interface PackBatchVerification {
  outcomes: PackBatchOutcome[];
  summary: { verified: number; unsigned: number; failed: number; total: number };
  /**
   * 0 when no pack failed, else the `PACK_VERIFICATION_EXIT_CODES` code of the first failure in
   * the order given; an empty batch is 0 here (the caller decides whether "nothing" passes).
   */
  exitCode: number;
  /** The first failing outcome, if any. */
  firstFailure: PackBatchOutcome | undefined;
}

/**
 * Verifies several pack folders one after the other with `verifyPack` and applies the batch
 * policy (README "Batches"): a pack fails unless `verified`, except that an `unsigned` pack
 * passes unless `requireSigned`. A pack's refusal never stops the batch; a thrown error
 * (`ERR_KEY_SELECTOR`, `ERR_ABORTED`…) does, as it would for one pack.
 */
export async function verifyPacks(
  dirs: readonly string[],
  options: VerifyPacksOptions,
): Promise<PackBatchVerification> {
  const { requireSigned = false, onResult, ...verifyOptions } = options;
  const outcomes: PackBatchOutcome[] = [];
  for (const dir of dirs) {
    const result = await verifyPack(dir, verifyOptions);
    const failed = result.kind !== 'verified' && (result.kind !== 'unsigned' || requireSigned);
    const outcome = { dir, result, failed };
    outcomes.push(outcome);
    onResult?.(outcome);
  }
  const count = (predicate: (outcome: PackBatchOutcome) => boolean) =>
    outcomes.filter(predicate).length;
  const firstFailure = outcomes.find((outcome) => outcome.failed);
  return {
    outcomes,
    summary: {
      verified: count((outcome) => outcome.result.kind === 'verified'),
      unsigned: count((outcome) => outcome.result.kind === 'unsigned'),
      failed: count((outcome) => outcome.failed),
      total: outcomes.length,
    },
    exitCode: firstFailure ? PACK_VERIFICATION_EXIT_CODES[firstFailure.result.kind] : 0,
    firstFailure,
  };
}
