import { abortError, StoreError } from './errors.js';
import { inflateGzip } from './gunzip.js';
import type { ExtractLimits } from './limits.js';

// The size and ratio accountant of the uncompressed tar stream, shared by extraction and by
// `openPackArchive`'s manifest read (README "Extraction: what is refused": `maxTarBytes`,
// `maxRatio` once `ratioGraceBytes` are out).

/**
 * Inflates a `.tar.gz` and yields its tar bytes piece by piece, refusing the archive at the piece
 * that takes it past `maxTarBytes` (`ERR_ARCHIVE_TOO_LARGE`) or past `maxRatio` once
 * `ratioGraceBytes` are out (`ERR_ARCHIVE_RATIO`). Each piece is judged against the compressed
 * bytes of whole slices (cut at fixed offsets) and pieces zlib cuts from them alone, so the
 * verdict does not depend on how the source chunked the bytes (gunzip.ts). An aborted `signal`
 * stops it between slices.
 */
export async function* inflateTar(
  source: AsyncIterable<unknown>,
  limits: ExtractLimits,
  signal: AbortSignal | undefined,
): AsyncGenerator<Buffer> {
  const budget = (compressed: number): number =>
    Math.min(limits.maxTarBytes, Math.max(limits.ratioGraceBytes, compressed * limits.maxRatio));
  let tarBytes = 0;
  for await (const slice of inflateGzip(source, { signal, budget })) {
    if (signal?.aborted) throw abortError(signal);
    for (const piece of slice.pieces) {
      tarBytes += piece.length;
      if (tarBytes > limits.maxTarBytes) {
        throw new StoreError(
          'ERR_ARCHIVE_TOO_LARGE',
          `more than ${limits.maxTarBytes} uncompressed bytes`,
        );
      }
      if (tarBytes > limits.ratioGraceBytes && tarBytes > slice.compressed * limits.maxRatio) {
        throw new StoreError(
          'ERR_ARCHIVE_RATIO',
          `compression ratio above ${limits.maxRatio}:1 (${tarBytes} bytes from ${slice.compressed}): a decompression bomb?`,
        );
      }
      yield piece;
    }
  }
}
