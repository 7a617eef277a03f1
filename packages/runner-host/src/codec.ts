import type { Readable, Writable } from 'node:stream';
import { RunnerHostError } from './errors.js';
import { MAX_FRAME_BYTES } from './frames.js';

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const UNSAFE_LINE_TERMINATORS = /[\u2028\u2029\u0085]/g;
const INITIAL_BUFFER_BYTES = 64 * 1024;

function escapeLineTerminator(ch: string): string {
  return ch === '\u2028' ? '\\u2028' : ch === '\u2029' ? '\\u2029' : '\\u0085';
}

/**
 * Serialises one frame as a JSON line (with its trailing `\n`). U+2028, U+2029 and U+0085 are
 * escaped so that no reader splitting on Unicode line terminators can cut a frame in two.
 */
export function encodeFrame(
  frame: object,
  maxFrameBytes: number = MAX_FRAME_BYTES,
  scrub?: (json: string) => string,
): string {
  let json = JSON.stringify(frame);
  if (scrub !== undefined) json = scrub(json);
  // `includes` is far cheaper than a regex scan (and free on one-byte strings, which cannot hold
  // these characters); the replace runs only when one is present.
  if (json.includes('\u2028') || json.includes('\u2029') || json.includes('\u0085')) {
    json = json.replace(UNSAFE_LINE_TERMINATORS, escapeLineTerminator);
  }
  // A UTF-16 code unit is at most 3 UTF-8 bytes: only long strings need an exact count.
  if (json.length * 3 > maxFrameBytes && Buffer.byteLength(json) > maxFrameBytes) {
    throw new RunnerHostError(
      'ERR_FRAME_TOO_LARGE',
      `frame of type ${JSON.stringify((frame as { type?: unknown }).type)} is ${Buffer.byteLength(json)} bytes, over the ${maxFrameBytes}-byte cap`,
    );
  }
  return `${json}\n`;
}

/** Why a line was skipped by a {@link FrameDecoder}. */
export type DecodeErrorCode =
  | 'invalid_json'
  | 'invalid_frame'
  | 'frame_too_large'
  | 'unterminated_frame'
  | 'input_budget_exceeded';

/**
 * Memory for partial frames shared by several decoders (the connections of one socket server):
 * a line whose buffer cannot be reserved is skipped and reported as `input_budget_exceeded`.
 */
export class InputBudget {
  readonly maxBytes: number;
  #used = 0;

  constructor(maxBytes: number) {
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
      throw new RunnerHostError('ERR_INVALID_OPTIONS', 'maxBytes must be a whole number >= 0');
    }
    this.maxBytes = maxBytes;
  }

  /** Bytes reserved now. */
  get used(): number {
    return this.#used;
  }

  /** Reserves `bytes` if they fit; returns whether they did. */
  tryReserve(bytes: number): boolean {
    if (this.#used + bytes > this.maxBytes) return false;
    this.#used += bytes;
    return true;
  }

  release(bytes: number): void {
    this.#used = Math.max(0, this.#used - bytes);
  }
}

export interface DecodeError {
  code: DecodeErrorCode;
  message: string;
  /** Length of the offending line in bytes. */
  bytes: number;
}

export interface FrameDecoderOptions {
  onFrame: (frame: Record<string, unknown>) => void;
  onError: (error: DecodeError) => void;
  maxFrameBytes?: number;
  /** Shared memory limit for partial frames (see {@link InputBudget}); unlimited by default. */
  budget?: InputBudget;
}

/**
 * Incremental NDJSON decoder. Splits on `\n` only (a trailing `\r` is dropped), copies each byte
 * at most a constant number of times (a doubling buffer, never re-concatenating the whole
 * pending line per chunk), and skips oversize, non-JSON and non-object lines with a report.
 */
export class FrameDecoder {
  readonly #onFrame: FrameDecoderOptions['onFrame'];
  readonly #onError: FrameDecoderOptions['onError'];
  readonly #maxFrameBytes: number;
  #buffer: Buffer = Buffer.allocUnsafe(0);
  #length = 0;
  /** Bytes of the current line dropped because it is already over the cap. */
  #discarding = 0;
  /** The last byte appended to the current line: a `\r` there is not part of the frame. */
  #lastByte = -1;
  /** The current line is being skipped because the shared budget had no room for it. */
  #overBudget = false;
  readonly #budget: InputBudget | undefined;

  constructor(options: FrameDecoderOptions) {
    this.#onFrame = options.onFrame;
    this.#onError = options.onError;
    this.#maxFrameBytes = options.maxFrameBytes ?? MAX_FRAME_BYTES;
    this.#budget = options.budget;
  }

  /** Bytes of memory the decoder holds for an incomplete line (at most the cap plus one). */
  get allocatedBytes(): number {
    return this.#buffer.length;
  }

  /** Bytes of an incomplete line held so far. */
  get pendingBytes(): number {
    return this.#length + this.#discarding;
  }

  push(chunk: Buffer | string): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let start = 0;
    while (start < bytes.length) {
      const newline = bytes.indexOf(NEWLINE, start);
      if (newline === -1) {
        this.#append(bytes, start, bytes.length);
        return;
      }
      if (this.#length === 0 && this.#discarding === 0) {
        this.#line(bytes, start, newline);
      } else {
        this.#append(bytes, start, newline);
        if (this.#discarding > 0) {
          const bytes = this.#discarding - (this.#lastByte === CARRIAGE_RETURN ? 1 : 0);
          if (this.#overBudget && bytes <= this.#maxFrameBytes) this.#reportOverBudget(bytes);
          else this.#reportOversize(bytes);
        } else {
          this.#line(this.#buffer, 0, this.#length);
        }
      }
      this.#reset();
      start = newline + 1;
    }
  }

  /** Call at end of input: an unterminated last line is reported, never parsed. */
  end(): void {
    const pending = this.pendingBytes;
    this.#reset();
    this.dispose();
    if (pending > 0) {
      this.#onError({
        code: 'unterminated_frame',
        message: `input ended inside a frame (${pending} bytes without a terminating newline)`,
        bytes: pending,
      });
    }
  }

  #append(source: Buffer, from: number, to: number): void {
    const count = to - from;
    if (count > 0) this.#lastByte = source[to - 1] as number;
    // One byte over the cap is kept: it may be the `\r` of a `\r\n` ending, which is not part
    // of the frame. Only the finished line is measured (in #line), so a frame of exactly the cap
    // gets the same verdict whether its `\r` and `\n` arrive in one chunk or two.
    if (this.#discarding > 0 || this.#length + count > this.#maxFrameBytes + 1) {
      this.#discarding += this.#length + count;
      this.#length = 0;
      return;
    }
    if (this.#length + count > this.#buffer.length) {
      let capacity = Math.max(this.#buffer.length * 2, INITIAL_BUFFER_BYTES);
      while (capacity < this.#length + count) capacity *= 2;
      capacity = Math.min(capacity, this.#maxFrameBytes + 1);
      if (this.#budget !== undefined && !this.#budget.tryReserve(capacity - this.#buffer.length)) {
        // No room in the shared budget: skip this line like an oversize one, holding nothing.
        this.#overBudget = true;
        this.#discarding = this.#length + count;
        this.#length = 0;
        this.dispose();
        return;
      }
      const grown = Buffer.allocUnsafe(capacity);
      this.#buffer.copy(grown, 0, 0, this.#length);
      this.#buffer = grown;
    }
    source.copy(this.#buffer, this.#length, from, to);
    this.#length += count;
  }

  #reset(): void {
    this.#length = 0;
    this.#discarding = 0;
    this.#lastByte = -1;
    this.#overBudget = false;
    // Do not keep a 16 MiB buffer alive because one frame was large (nor any buffer at all when
    // the memory is shared with other connections).
    if (this.#buffer.length > 1024 * 1024 || this.#budget !== undefined) this.dispose();
  }

  /** Drops the line buffer and returns its memory to the budget (the decoder stays usable). */
  dispose(): void {
    this.#budget?.release(this.#buffer.length);
    this.#buffer = Buffer.allocUnsafe(0);
  }

  #reportOverBudget(bytes: number): void {
    this.#onError({
      code: 'input_budget_exceeded',
      message: `skipped a ${bytes}-byte line: the connections' shared input budget of ${this.#budget?.maxBytes ?? 0} bytes was full`,
      bytes,
    });
  }

  #reportOversize(bytes: number): void {
    this.#onError({
      code: 'frame_too_large',
      message: `skipped a ${bytes}-byte line, over the ${this.#maxFrameBytes}-byte frame cap`,
      bytes,
    });
  }

  #line(source: Buffer, from: number, to: number): void {
    let end = to;
    if (end > from && source[end - 1] === CARRIAGE_RETURN) end -= 1;
    if (end === from) return; // blank lines carry nothing
    if (end - from > this.#maxFrameBytes) {
      this.#reportOversize(end - from);
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(source.toString('utf8', from, end));
    } catch {
      // JSON.parse's message quotes the line, which may hold a secret the host never learned.
      this.#onError({
        code: 'invalid_json',
        message: `skipped a ${end - from}-byte line that is not JSON`,
        bytes: end - from,
      });
      return;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      this.#onError({
        code: 'invalid_frame',
        message: 'skipped a line that is not a JSON object',
        bytes: end - from,
      });
      return;
    }
    this.#onFrame(value as Record<string, unknown>);
  }
}

export interface ReadFramesOptions extends FrameDecoderOptions {
  /** Called once when the input ends, errors or closes (after any unterminated-tail report). */
  onEnd: (reason: 'eof' | 'error', error?: Error) => void;
}

/** Feeds a readable byte stream into a {@link FrameDecoder}; returns a function that detaches. */
export function readFrames(input: Readable, options: ReadFramesOptions): () => void {
  const decoder = new FrameDecoder(options);
  let ended = false;
  const finish = (reason: 'eof' | 'error', error?: Error) => {
    if (ended) return;
    ended = true;
    detach();
    if (reason === 'eof') decoder.end();
    else decoder.dispose();
    options.onEnd(reason, error);
  };
  const onData = (chunk: Buffer | string) => {
    if (!ended) decoder.push(chunk);
  };
  const onEnd = () => finish('eof');
  const onError = (error: Error) => finish('error', error);
  const onClose = () => finish('eof');
  const detach = () => {
    input.off('data', onData);
    input.off('end', onEnd);
    input.off('error', onError);
    input.off('close', onClose);
  };
  input.on('data', onData);
  input.on('end', onEnd);
  input.on('error', onError);
  input.on('close', onClose);
  return () => {
    ended = true;
    detach();
    decoder.dispose();
  };
}

interface QueuedLine {
  kind: 'line';
  line: string;
  bytes: number;
}

interface QueuedDelta {
  kind: 'delta';
  frame: { type: string; runId: string; seq: number; delta: string };
  parts: string[];
  bytes: number;
  /** Characters of delta in `parts`. */
  chars: number;
}

type Queued = QueuedLine | QueuedDelta;

export interface FrameWriterOptions {
  maxFrameBytes?: number;
  /** Bytes queued (in this writer and in the stream) above which {@link FrameWriter.whenWritable} waits. */
  highWaterBytes?: number;
  /** Largest `delta` a coalesced text/thinking frame may grow to. */
  maxCoalescedBytes?: number;
  /** Called once if the stream errors or closes; queued frames are then dropped. */
  onClose?: (error?: Error) => void;
  /** Applied to every serialised frame before it is queued (the host removes secrets here). */
  scrub?: (json: string) => string;
}

const BATCH_BYTES = 32 * 1024;

/** The most bytes one UTF-16 code unit takes in a frame: `\u0001`, a lone `\ud800`, `\u2028`. */
const MAX_JSON_BYTES_PER_UNIT = 6;
/** Bytes of a delta frame besides its strings: keys, punctuation, a `seq` of up to 16 digits. */
const DELTA_FRAME_FIXED_BYTES = 64;

/**
 * The most bytes a delta frame of `type` and `runId` with `deltaChars` characters of delta can
 * encode to, whatever the characters (a scrubbed secret only shrinks: each is at least as long as
 * six one-byte characters and becomes a ten-byte marker).
 */
export function maxDeltaFrameBytes(type: string, runId: string, deltaChars: number): number {
  return (
    MAX_JSON_BYTES_PER_UNIT * (deltaChars + type.length + runId.length) + DELTA_FRAME_FIXED_BYTES
  );
}

/** The longest delta (in UTF-16 code units) a frame of `type` and `runId` surely carries under `maxFrameBytes`. */
export function maxDeltaChars(type: string, runId: string, maxFrameBytes: number): number {
  return Math.floor(
    (maxFrameBytes - DELTA_FRAME_FIXED_BYTES) / MAX_JSON_BYTES_PER_UNIT -
      type.length -
      runId.length,
  );
}

/**
 * Writes frames to a byte stream, respecting `drain`. Consecutive text or thinking deltas of one
 * run that are still queued are merged into one frame (so a slow reader costs bounded frames,
 * not unbounded objects); every other frame is kept as it is and never dropped.
 */
export class FrameWriter {
  readonly #output: Writable;
  readonly #maxFrameBytes: number;
  readonly #highWaterBytes: number;
  readonly #maxCoalescedBytes: number;
  readonly #onClose: ((error?: Error) => void) | undefined;
  readonly #scrub: ((json: string) => string) | undefined;
  #queue: Queued[] = [];
  #head = 0;
  #queuedBytes = 0;
  #blocked = false;
  #scheduled = false;
  #closed = false;
  #ending = false;
  #pendingWrites = 0;
  #idleWaiters: (() => void)[] = [];
  #writableWaiters: (() => void)[] = [];

  constructor(output: Writable, options: FrameWriterOptions = {}) {
    this.#output = output;
    this.#maxFrameBytes = options.maxFrameBytes ?? MAX_FRAME_BYTES;
    this.#highWaterBytes = options.highWaterBytes ?? 1024 * 1024;
    this.#maxCoalescedBytes = options.maxCoalescedBytes ?? 32 * 1024;
    this.#onClose = options.onClose;
    this.#scrub = options.scrub;
    output.on('drain', this.#onDrain);
    output.on('error', this.#onStreamError);
    output.on('close', this.#onStreamClose);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Bytes waiting in this writer plus bytes the stream has not flushed yet. */
  get bufferedBytes(): number {
    return this.#queuedBytes + (this.#output.writableLength ?? 0);
  }

  /** Queues one frame. Throws `ERR_FRAME_TOO_LARGE` (nothing queued) if it cannot fit. */
  write(frame: object): void {
    if (this.#closed || this.#ending) return;
    const line = encodeFrame(frame, this.#maxFrameBytes, this.#scrub);
    const bytes = line.length;
    this.#queue.push({ kind: 'line', line, bytes });
    this.#queuedBytes += bytes;
    this.#schedule();
  }

  /**
   * Queues a delta for `type`/`runId`, merging it into the last queued frame when that frame is
   * a not-yet-written delta of the same type and run and the merged frame surely stays under the
   * cap. `makeFrame` is called only when a new frame is needed (so the caller spends a `seq` only
   * then). Returns whether a new frame was queued. A delta whose frame is over the cap throws
   * `ERR_FRAME_TOO_LARGE` here, before `makeFrame`, with nothing queued: the frame is encoded
   * only when written, where a throw would reach no caller.
   */
  writeDelta(
    type: string,
    runId: string,
    delta: string,
    makeFrame: () => { type: string; runId: string; seq: number; delta: string },
  ): boolean {
    if (this.#closed || this.#ending) return false;
    const last = this.#queue.length > this.#head ? this.#queue[this.#queue.length - 1] : undefined;
    if (
      last !== undefined &&
      last.kind === 'delta' &&
      last.frame.type === type &&
      last.frame.runId === runId &&
      last.bytes + delta.length <= this.#maxCoalescedBytes &&
      maxDeltaFrameBytes(type, runId, last.chars + delta.length) <= this.#maxFrameBytes
    ) {
      last.parts.push(delta);
      last.bytes += delta.length;
      last.chars += delta.length;
      this.#queuedBytes += delta.length;
      return false;
    }
    if (maxDeltaFrameBytes(type, runId, delta.length) > this.#maxFrameBytes) {
      // Could be over: measure it exactly, with the longest `seq` it may get.
      encodeFrame(
        { type, runId, seq: Number.MAX_SAFE_INTEGER, delta },
        this.#maxFrameBytes,
        this.#scrub,
      );
    }
    const frame = makeFrame();
    const bytes = delta.length + 64;
    this.#queue.push({ kind: 'delta', frame, parts: [delta], bytes, chars: delta.length });
    this.#queuedBytes += bytes;
    this.#schedule();
    return true;
  }

  /** Resolves at once while below the high-water mark, else once the reader has caught up. */
  whenWritable(): Promise<void> {
    if (this.#closed || this.bufferedBytes < this.#highWaterBytes) return Promise.resolve();
    return new Promise((resolve) => this.#writableWaiters.push(resolve));
  }

  /** Resolves once every queued frame has been handed to the operating system (or the stream closed). */
  flush(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Flushes, then ends the stream when `endStream` is set. */
  async end(endStream: boolean): Promise<void> {
    await this.flush();
    this.#ending = true;
    if (this.#closed) return;
    if (!endStream) {
      this.#detach();
      return;
    }
    await new Promise<void>((resolve) => {
      this.#output.end(() => resolve());
      this.#output.once('error', () => resolve());
      this.#output.once('close', () => resolve());
    });
    this.#detach();
  }

  #isIdle(): boolean {
    return this.#closed || (this.#queue.length === this.#head && this.#pendingWrites === 0);
  }

  #schedule(): void {
    if (this.#scheduled || this.#blocked) return;
    this.#scheduled = true;
    queueMicrotask(this.#pump);
  }

  #pump = (): void => {
    this.#scheduled = false;
    while (!this.#blocked && !this.#closed && this.#queue.length > this.#head) {
      let batch = '';
      let batchBytes = 0;
      while (this.#queue.length > this.#head && (batch === '' || batchBytes < BATCH_BYTES)) {
        const item = this.#queue[this.#head] as Queued;
        this.#head += 1;
        this.#queuedBytes -= item.bytes;
        let line: string;
        if (item.kind === 'line') {
          line = item.line;
        } else {
          item.frame.delta =
            item.parts.length === 1 ? (item.parts[0] as string) : item.parts.join('');
          line = encodeFrame(item.frame, this.#maxFrameBytes, this.#scrub);
        }
        batch = batch === '' ? line : batch + line;
        batchBytes += line.length;
      }
      if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      this.#pendingWrites += 1;
      const ok = this.#output.write(batch, this.#onWritten);
      if (!ok) this.#blocked = true;
    }
    if (this.#queue.length === this.#head) {
      this.#queue = [];
      this.#head = 0;
      this.#queuedBytes = 0;
    }
    this.#wakeWritable();
  };

  #onWritten = (): void => {
    this.#pendingWrites -= 1;
    this.#wakeIdle();
    this.#wakeWritable();
  };

  #onDrain = (): void => {
    this.#blocked = false;
    this.#pump();
  };

  #wakeWritable(): void {
    if (this.#writableWaiters.length === 0) return;
    if (!this.#closed && this.bufferedBytes >= this.#highWaterBytes) return;
    const waiters = this.#writableWaiters;
    this.#writableWaiters = [];
    for (const wake of waiters) wake();
  }

  #wakeIdle(): void {
    if (this.#idleWaiters.length === 0 || !this.#isIdle()) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const wake of waiters) wake();
  }

  #onStreamError = (error: Error): void => this.#close(error);
  #onStreamClose = (): void => this.#close();

  #close(error?: Error): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue = [];
    this.#head = 0;
    this.#queuedBytes = 0;
    this.#detach();
    this.#wakeIdle();
    this.#wakeWritable();
    this.#onClose?.(error);
  }

  #detach(): void {
    this.#output.off('drain', this.#onDrain);
    this.#output.off('close', this.#onStreamClose);
    // Keep a no-op error listener: a late EPIPE must not become an uncaught exception.
    this.#output.off('error', this.#onStreamError);
    this.#output.on('error', () => {});
  }
}
