import { createGunzip, type Gunzip } from 'node:zlib';
import { abortError, StoreError } from './errors.js';

// zlib is driven here by hand instead of through `pipeline(source, createGunzip(), …)` because
// Node's Gunzip gives a chunking-dependent verdict on what follows the end of the gzip stream
// (bytes starting with a NUL are silently dropped when they share a chunk with the stream's end,
// and fail as a write-after-end when they arrive in a later chunk), and because pipeline rejects
// while its last stage is still writing files. Here the compressed stream is cut into slices at
// fixed offsets, each slice is inflated completely before the next is read, and every verdict
// (trailing data, truncation, corruption, the ratio check of the caller) is taken at a slice
// boundary: the same bytes give the same verdict, whatever chunks the source delivered them in
// (README "Errors": ERR_ARCHIVE_TRAILING_DATA).

/**
 * Compressed bytes given to zlib at a time. The output of one slice is buffered before it is
 * yielded; `budget` stops zlib as soon as the output passes what the caller will accept.
 */
export const GZIP_SLICE_BYTES = 64 * 1024;

export interface InflateOptions {
  signal?: AbortSignal | undefined;
  /**
   * The most uncompressed bytes (in total) the caller accepts once `compressed` bytes are read
   * (its size and ratio bounds). Past it zlib is stopped: the pieces up to the one that crossed
   * it are yielded, so the caller refuses at that piece as it would have anyway, without
   * buffering the rest of a decompression bomb.
   */
  budget?: (compressed: number) => number;
}

export interface InflatedSlice {
  /** The uncompressed bytes this slice produced, in order (possibly none). */
  pieces: Buffer[];
  /** Their total length. */
  bytes: number;
  /** Compressed bytes read so far, this slice included. */
  compressed: number;
}

export function notGzip(head: Buffer): StoreError {
  const text = head.subarray(0, 64).toString('latin1').trimStart().toLowerCase();
  const looksHtml = text.startsWith('<') || text.startsWith('<!doctype');
  return new StoreError(
    'ERR_ARCHIVE_NOT_GZIP',
    head.length === 0
      ? 'the archive is empty'
      : looksHtml
        ? 'the archive is an HTML page, not a .tar.gz (a login page or an error page?)'
        : 'the archive is not gzip-compressed',
  );
}

function trailingData(): StoreError {
  return new StoreError('ERR_ARCHIVE_TRAILING_DATA', 'data after the end of the gzip stream');
}

function zlibError(error: unknown): StoreError {
  const e = error as NodeJS.ErrnoException;
  // The first member's magic was checked before inflating: a bad header now is a second "member"
  // that is not gzip, i.e. bytes after the end of the compressed stream.
  if (/incorrect header check/i.test(e.message ?? '')) {
    return new StoreError('ERR_ARCHIVE_TRAILING_DATA', 'data after the end of the gzip stream', {
      cause: error,
    });
  }
  if (e.code === 'Z_BUF_ERROR' || /unexpected end/i.test(e.message ?? '')) {
    return new StoreError('ERR_ARCHIVE_TRUNCATED', 'the gzip stream is truncated', {
      cause: error,
    });
  }
  return new StoreError(
    'ERR_ARCHIVE_CORRUPT',
    `the gzip stream is corrupt: ${String(e.message ?? e)}`,
    { cause: error },
  );
}

function asBuffer(chunk: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
  if (typeof chunk === 'string') return Buffer.from(chunk, 'latin1');
  throw new StoreError('ERR_INVALID_ARGUMENT', 'the archive stream must yield bytes');
}

/** Waits until zlib has consumed `slice` entirely (or failed); its output arrives meanwhile. */
function feed(engine: Gunzip, slice: Buffer): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      engine.off('error', done);
      engine.off('close', done);
      resolve();
    };
    engine.once('error', done);
    engine.once('close', done);
    engine.write(slice, () => done());
  });
}

function finish(engine: Gunzip): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      engine.off('end', done);
      engine.off('error', done);
      engine.off('close', done);
      resolve();
    };
    engine.once('end', done);
    engine.once('error', done);
    engine.once('close', done);
    engine.end();
  });
}

/**
 * Inflates a gzip stream (one or more members, RFC 1952) slice by slice. Throws
 * `ERR_ARCHIVE_NOT_GZIP` unless it starts with the gzip magic, `ERR_ARCHIVE_TRAILING_DATA` for
 * any byte after the last member zlib accepts, `ERR_ARCHIVE_TRUNCATED` / `ERR_ARCHIVE_CORRUPT`
 * for a broken stream. Everything a slice produced before its error is yielded first.
 */
export async function* inflateGzip(
  source: AsyncIterable<unknown>,
  options: InflateOptions = {},
): AsyncGenerator<InflatedSlice> {
  const { signal, budget } = options;
  const engine = createGunzip({ chunkSize: 64 * 1024 });
  let engineError: unknown;
  let output: Buffer[] = [];
  let outputBytes = 0;
  let totalOutput = 0;
  let sliceEnd = 0;
  let overBudget = false;
  engine.on('data', (piece: Buffer) => {
    if (overBudget) return;
    output.push(piece);
    outputBytes += piece.length;
    totalOutput += piece.length;
    if (budget && totalOutput > budget(sliceEnd)) {
      overBudget = true;
      engine.destroy();
    }
  });
  engine.on('error', (error) => {
    engineError ??= error;
  });
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let compressed = 0;
  const take = (size: number): Buffer => {
    const all = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
    const slice = all.subarray(0, size);
    const rest = all.subarray(size);
    pending = rest.length > 0 ? [rest] : [];
    pendingBytes = rest.length;
    return slice;
  };
  const drained = (): InflatedSlice => {
    const slice = { pieces: output, bytes: outputBytes, compressed };
    output = [];
    outputBytes = 0;
    return slice;
  };
  async function* inflate(slice: Buffer): AsyncGenerator<InflatedSlice> {
    if (compressed === 0 && (slice.length < 2 || slice[0] !== 0x1f || slice[1] !== 0x8b)) {
      throw notGzip(slice);
    }
    const before = engine.bytesWritten;
    sliceEnd = compressed + slice.length;
    await feed(engine, slice);
    compressed += slice.length;
    const consumed = engine.bytesWritten - before;
    yield drained();
    if (overBudget) {
      // The caller refuses at the piece that crossed its budget; reached only if it did not.
      throw new StoreError(
        'ERR_ARCHIVE_RATIO',
        'the archive inflates past its size or ratio bounds: a decompression bomb?',
      );
    }
    if (engineError !== undefined) throw zlibError(engineError);
    // zlib stops reading at the end of a member unless a new member follows: what it left is
    // not part of the compressed stream.
    if (consumed < slice.length) throw trailingData();
  }

  try {
    for await (const chunk of source) {
      if (signal?.aborted) throw abortError(signal);
      const bytes = asBuffer(chunk);
      if (bytes.length === 0) continue;
      pending.push(bytes);
      pendingBytes += bytes.length;
      while (pendingBytes >= GZIP_SLICE_BYTES) yield* inflate(take(GZIP_SLICE_BYTES));
    }
    if (signal?.aborted) throw abortError(signal);
    if (pendingBytes > 0 || compressed === 0) yield* inflate(take(pendingBytes));
    await finish(engine);
    yield drained();
    if (engineError !== undefined) throw zlibError(engineError);
  } finally {
    engine.destroy();
  }
}
