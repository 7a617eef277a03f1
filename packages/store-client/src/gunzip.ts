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

/**
 * zlib's output buffer: one slice of an ordinary archive inflates into one, so that zlib runs
 * once per slice on the thread pool (64 KiB made it run ~3 times, and the install ~20% slower,
 * issue 14, bench/install).
 */
const INFLATE_CHUNK_BYTES = 256 * 1024;

/**
 * Read-ahead: at most this many slices are read and inflated before the caller takes them, and a
 * new one is started only while the output the caller holds and the slices waiting for it stay
 * under {@link READ_AHEAD_MAX_BYTES}. The slice being inflated may still grow as far as its
 * budget allows, as without read-ahead, so what is held at once is at most that bound plus one
 * slice's output (the bound a caller without read-ahead had, plus 4 MiB).
 */
const READ_AHEAD_SLICES = 2;
const READ_AHEAD_MAX_BYTES = 4 * 1024 * 1024;

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

/** One slice's output, and the refusal that follows it, if any. */
interface Step {
  slice: InflatedSlice;
  verdict?: StoreError;
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
 * for a broken stream. The output of the slices before the one zlib fails in is yielded first,
 * then the error; of that slice, Node's zlib drops what the failing call produced (with 256 KiB
 * output buffers, usually all of it). The same bytes always give the same output and verdict.
 */
export async function* inflateGzip(
  source: AsyncIterable<unknown>,
  options: InflateOptions = {},
): AsyncGenerator<InflatedSlice> {
  const { signal, budget } = options;
  const engine = createGunzip({ chunkSize: INFLATE_CHUNK_BYTES });
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
  // One slice inflated: its output, and the verdict that follows it (thrown after it is yielded).
  const inflate = async (slice: Buffer): Promise<Step> => {
    if (compressed === 0 && (slice.length < 2 || slice[0] !== 0x1f || slice[1] !== 0x8b)) {
      throw notGzip(slice);
    }
    const before = engine.bytesWritten;
    sliceEnd = compressed + slice.length;
    await feed(engine, slice);
    compressed += slice.length;
    const consumed = engine.bytesWritten - before;
    const inflated = drained();
    // The caller refuses at the piece that crossed its budget; reached only if it did not.
    if (overBudget) {
      return {
        slice: inflated,
        verdict: new StoreError(
          'ERR_ARCHIVE_RATIO',
          'the archive inflates past its size or ratio bounds: a decompression bomb?',
        ),
      };
    }
    if (engineError !== undefined) return { slice: inflated, verdict: zlibError(engineError) };
    // zlib stops reading at the end of a member unless a new member follows: what it left is
    // not part of the compressed stream.
    if (consumed < slice.length) return { slice: inflated, verdict: trailingData() };
    return { slice: inflated };
  };
  const chunks = source[Symbol.asyncIterator]();
  let sourceEnded = false;
  let lastSliceFed = false;
  // Set when the step that ends the stream starts: nothing follows it.
  let exhausted = false;
  // The next slice: read from the source and inflated. Never two at once: the next one starts
  // only once this one has settled.
  const next = async (): Promise<Step> => {
    while (!sourceEnded && pendingBytes < GZIP_SLICE_BYTES) {
      if (signal?.aborted) throw abortError(signal);
      const read = await chunks.next();
      if (read.done === true) {
        sourceEnded = true;
        break;
      }
      const bytes = asBuffer(read.value);
      if (bytes.length === 0) continue;
      pending.push(bytes);
      pendingBytes += bytes.length;
    }
    if (signal?.aborted) throw abortError(signal);
    if (pendingBytes >= GZIP_SLICE_BYTES) return inflate(take(GZIP_SLICE_BYTES));
    if (!lastSliceFed) {
      lastSliceFed = true;
      if (pendingBytes > 0 || compressed === 0) return inflate(take(pendingBytes));
    }
    exhausted = true;
    await finish(engine);
    const rest = drained();
    return engineError === undefined
      ? { slice: rest }
      : { slice: rest, verdict: zlibError(engineError) };
  };

  // Read-ahead: while the caller works on one slice's output (writing files), the next ones are
  // read and inflated, zlib running on the thread pool. Every verdict is still thrown where it
  // was: after the output of the slice it follows, once the caller asks for more.
  const ready: Step[] = [];
  let readyBytes = 0;
  let heldByCaller = 0;
  let running: Promise<void> | undefined;
  let failure: { error: unknown } | undefined;
  const pump = (): void => {
    if (running !== undefined || failure !== undefined || exhausted) return;
    if (ready.length >= READ_AHEAD_SLICES || ready.at(-1)?.verdict !== undefined) return;
    if (heldByCaller + readyBytes > READ_AHEAD_MAX_BYTES) return;
    running = next().then(
      (step) => {
        running = undefined;
        ready.push(step);
        readyBytes += step.slice.bytes;
        pump();
      },
      (error: unknown) => {
        running = undefined;
        failure = { error };
      },
    );
  };
  try {
    for (;;) {
      heldByCaller = 0;
      pump();
      while (ready.length === 0 && running !== undefined) await running;
      const step = ready.shift();
      if (step === undefined) {
        if (failure !== undefined) throw failure.error;
        return;
      }
      readyBytes -= step.slice.bytes;
      heldByCaller = step.slice.bytes;
      pump();
      yield step.slice;
      if (step.verdict !== undefined) throw step.verdict;
    }
  } finally {
    engine.destroy();
    // A read still under way ends with the source, which the caller closes; its outcome is moot.
    void chunks.return?.()?.catch(() => undefined);
  }
}
