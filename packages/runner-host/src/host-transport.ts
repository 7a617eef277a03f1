import type { Readable, Writable } from 'node:stream';
import { FrameWriter, maxDeltaChars, readFrames, type InputBudget } from './codec.js';
import type { LogLevel } from './frames.js';
import type { HostTimers, RunnerHostLogEntry } from './host.js';
import { HOST_LIMITS, capString, splitDelta } from './host-limits.js';
import type { SecretSet } from './redactor.js';

/** A run as the transport numbers its frames: every frame it sends takes the next `seq`. */
export interface NumberedRun {
  readonly runId: string;
  seq: number;
}

export interface HostTransportOptions {
  maxFrameBytes: number;
  /** Output bytes buffered above which {@link HostTransport.whenWritable} waits. */
  highWaterBytes: number;
  /** Output bytes buffered above which the driver's input is no longer read. */
  maxBufferedOutputBytes: number;
  /** `false`: every delta is its own frame. Default `true`. */
  coalesceDeltas?: boolean;
  /** Every outgoing line is scrubbed with it, and so is every diagnostic. */
  secrets: SecretSet;
  logger?: ((entry: RunnerHostLogEntry) => void) | undefined;
  inputBudget?: InputBudget | undefined;
  timers: HostTimers;
  /** How long {@link HostTransport.close} waits for the driver to read what is left. */
  flushTimeoutMs: number;
  /** The output stream errored or closed: nothing more can be sent. */
  onOutputClosed: () => void;
}

export interface HostInputHandlers {
  /** One decoded line (a JSON object, not yet validated). */
  onFrame: (value: Record<string, unknown>) => void;
  onEnd: (reason: 'eof' | 'input_error') => void;
}

/**
 * The host's channel to its driver: reads and decodes the driver's lines, and encodes, scrubs
 * and writes the host's frames with backpressure and delta coalescing (README "Backpressure",
 * "Secrets"). It numbers run frames but knows nothing of what they mean.
 */
export class HostTransport {
  readonly #input: Readable;
  readonly #output: Writable;
  readonly #options: HostTransportOptions;
  readonly #writer: FrameWriter;
  #detachInput: () => void = () => {};
  #reading = false;
  #inputPaused = false;

  constructor(input: Readable, output: Writable, options: HostTransportOptions) {
    this.#input = input;
    this.#output = output;
    this.#options = options;
    const { secrets } = options;
    this.#writer = new FrameWriter(output, {
      maxFrameBytes: options.maxFrameBytes,
      highWaterBytes: options.highWaterBytes,
      ...(options.coalesceDeltas === false ? { maxCoalescedBytes: 0 } : {}),
      scrub: (json) => secrets.scrubFrame(json),
      onClose: () => options.onOutputClosed(),
    });
  }

  /** Starts reading the driver's lines; a line that cannot be decoded is logged and skipped. */
  read(handlers: HostInputHandlers): void {
    this.#reading = true;
    this.#detachInput = readFrames(this.#input, {
      maxFrameBytes: this.#options.maxFrameBytes,
      ...(this.#options.inputBudget !== undefined ? { budget: this.#options.inputBudget } : {}),
      onFrame: handlers.onFrame,
      onError: (error) => {
        this.log('warn', error.message, error.code);
        this.throttleInput();
      },
      onEnd: (reason) => handlers.onEnd(reason === 'eof' ? 'eof' : 'input_error'),
    });
  }

  /** Reads nothing more (what was detached is never resumed). */
  stopReading(): void {
    this.#reading = false;
    this.#detachInput();
  }

  /** Bytes of output not yet read by the driver (queued here or in the stream). */
  get bufferedBytes(): number {
    return this.#writer.bufferedBytes;
  }

  /** Resolves at once below the high-water mark, else once the driver has read enough. */
  whenWritable(): Promise<void> {
    return this.#writer.whenWritable();
  }

  /** A diagnostic: to the logger and as a `log` frame, capped and scrubbed of secrets. */
  readonly log = (level: LogLevel, message: string, code?: string, runId?: string): void => {
    const { highWaterBytes } = this.#options;
    const entry = this.report(level, message, code, runId);
    // Logs are the one frame kind that may be dropped: a driver that floods the host with
    // garbage and does not read must not grow our memory, and a log over the frame cap (a
    // long message under a small `maxFrameBytes`) must not throw into the driver's input.
    if (this.#writer.bufferedBytes >= highWaterBytes) return;
    try {
      this.#writer.write({ type: 'log', ...entry });
    } catch {
      // Dropped, like a log while the output is backed up.
    }
  };

  /**
   * A diagnostic for the embedder's logger only (capped and scrubbed of secrets), for what the
   * driver is told by another frame (a `fatal`). Returns the entry as reported.
   */
  report(level: LogLevel, message: string, code?: string, runId?: string): RunnerHostLogEntry {
    const { secrets, logger } = this.#options;
    const entry: RunnerHostLogEntry = {
      level,
      message: secrets.scrubText(capString(message, HOST_LIMITS.textFieldChars)),
    };
    if (code !== undefined) entry.code = code;
    // A run id may be the driver's text echoed back (an invalid `run` frame's): scrubbed too.
    if (runId !== undefined) entry.runId = secrets.scrubText(runId);
    try {
      logger?.(entry);
    } catch {
      // A broken logger must not take the session down.
    }
    return entry;
  }

  /** Queues a frame; one that cannot be encoded (over the cap) is dropped and logged. */
  readonly send = (frame: object): void => {
    try {
      this.#writer.write(frame);
    } catch (error) {
      this.log('error', `dropped an outgoing frame: ${(error as Error).message}`, 'invalid_frame');
    }
  };

  /** Sends a frame of `run` with the run's next `seq`. */
  sendRunEvent(run: NumberedRun, frame: Record<string, unknown>): void {
    run.seq += 1;
    this.send({ ...frame, runId: run.runId, seq: run.seq });
  }

  /**
   * Queues delta text of `run` in pieces of at most `HOST_LIMITS.deltaPieceChars`, merged into
   * the run's last unsent delta frame of the same type when there is one: a `seq` is spent only
   * for a new frame.
   */
  sendDelta(run: NumberedRun, type: 'text' | 'thinking', delta: string): void {
    // Pieces short enough to fit the frame cap whatever their characters (JSON may spend six
    // bytes on one): under a small `maxFrameBytes` an engine's text is sent in more frames, never
    // in one the writer cannot encode.
    const fits = maxDeltaChars(type, run.runId, this.#options.maxFrameBytes);
    if (fits < 2) {
      this.log(
        'error',
        `dropped a ${type} delta: maxFrameBytes (${this.#options.maxFrameBytes}) leaves no room for one`,
        'invalid_frame',
        run.runId,
      );
      return;
    }
    for (const piece of splitDelta(delta, Math.min(HOST_LIMITS.deltaPieceChars, fits))) {
      try {
        this.#writer.writeDelta(type, run.runId, piece, () => {
          run.seq += 1;
          return { type, runId: run.runId, seq: run.seq, delta: '' };
        });
      } catch (error) {
        this.log(
          'error',
          `dropped an outgoing frame: ${(error as Error).message}`,
          'invalid_frame',
          run.runId,
        );
      }
    }
  }

  /**
   * A driver that keeps sending (pings, runs to reject, garbage) but does not read what we send
   * would grow the output queue without end: past the hard cap, stop reading it until it reads.
   */
  throttleInput(): void {
    if (this.#inputPaused || this.#writer.bufferedBytes <= this.#options.maxBufferedOutputBytes) {
      return;
    }
    this.#inputPaused = true;
    this.#input.pause();
    void this.#writer.whenWritable().then(() => {
      this.#inputPaused = false;
      if (this.#reading) this.#input.resume();
    });
  }

  /**
   * Flushes what is queued and ends the output when `endOutput`. A driver that stopped reading
   * for good must not keep the host alive: after `flushTimeoutMs` the output is destroyed (when
   * `endOutput`) and this resolves anyway.
   */
  async close(endOutput: boolean): Promise<void> {
    const { timers, flushTimeoutMs } = this.#options;
    let flushTimer: unknown;
    const flushed = await Promise.race([
      this.#writer.end(endOutput).then(() => true),
      new Promise<boolean>((resolve) => {
        flushTimer = timers.setTimeout(() => resolve(false), flushTimeoutMs);
      }),
    ]);
    timers.clearTimeout(flushTimer);
    if (!flushed && endOutput) this.#output.destroy();
  }
}
