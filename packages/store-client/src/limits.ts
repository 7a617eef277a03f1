import { StoreError } from './errors.js';

/** Bounds on what one archive may make extraction do. Every limit is a refusal, never a truncation. */
export interface ExtractLimits {
  /** Files and directories extracted, the folders a file's path implies included. */
  maxEntries: number;
  /** Entries read in total, including those outside `stripPrefix` that are skipped. */
  maxScannedEntries: number;
  /** Bytes of file content extracted. */
  maxBytes: number;
  /** Bytes of uncompressed tar stream read in total (headers, skipped entries and padding included). */
  maxTarBytes: number;
  /** Uncompressed bytes per compressed byte, checked as the stream is read. */
  maxRatio: number;
  /** The ratio is only judged past this many uncompressed bytes (tiny archives compress well). */
  ratioGraceBytes: number;
  /** UTF-8 bytes of one extracted path. */
  maxPathBytes: number;
  /** UTF-8 bytes of one path component. */
  maxNameBytes: number;
  /** Path components of one extracted path. */
  maxDepth: number;
  /** Bytes of one PAX extended header or GNU long-name header body. */
  maxMetaBytes: number;
}

export const DEFAULT_EXTRACT_LIMITS: Readonly<ExtractLimits> = Object.freeze({
  maxEntries: 20_000,
  maxScannedEntries: 200_000,
  maxBytes: 512 * 1024 * 1024,
  maxTarBytes: 2 * 1024 * 1024 * 1024,
  maxRatio: 200,
  ratioGraceBytes: 1024 * 1024,
  maxPathBytes: 1024,
  maxNameBytes: 255,
  maxDepth: 32,
  maxMetaBytes: 64 * 1024,
});

export function resolveExtractLimits(limits: Partial<ExtractLimits> = {}): ExtractLimits {
  const merged = { ...DEFAULT_EXTRACT_LIMITS };
  for (const key of Object.keys(DEFAULT_EXTRACT_LIMITS) as (keyof ExtractLimits)[]) {
    const value = limits[key];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !(value >= 0) || !Number.isFinite(value)) {
      throw new StoreError(
        'ERR_INVALID_ARGUMENT',
        `limits.${key} must be a non-negative finite number`,
      );
    }
    merged[key] = value;
  }
  return merged;
}
