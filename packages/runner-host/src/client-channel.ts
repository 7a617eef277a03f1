import type { Readable, Writable } from 'node:stream';
import type { EventBuffer } from './client-run.js';
import { FrameWriter, readFrames } from './codec.js';
import { parseHostFrame, type HostFrame } from './frames.js';
import type { HostTimers } from './host.js';

export interface ClientChannelOptions {
  maxFrameBytes?: number | undefined;
  /** Events buffered for iteration above which the channel stops reading. */
  maxBufferedEvents: number;
  now: () => number;
  timers: HostTimers;
  /** Receives lines that are not valid frames, as text. */
  onProtocolError?: ((message: string) => void) | undefined;
  /** The channel died under the client (output closed, input ended or failed). */
  onLost: (reason: string) => void;
}

/**
 * The driver's channel to its host: writes frames, reads and validates the host's lines, stops
 * reading while the caller leaves too many events unconsumed (README "Backpressure"), remembers
 * when the host was last heard from, and closes both streams once.
 */
export class ClientChannel implements EventBuffer {
  /** Resolves when the channel is closed, for whatever reason. */
  readonly closed: Promise<void>;
  readonly #input: Readable;
  readonly #options: ClientChannelOptions;
  readonly #writer: FrameWriter;
  #resolveClosed!: () => void;
  #detachInput: () => void = () => {};
  #closed = false;
  #inputEnded = false;
  #paused = false;
  #bufferedEvents = 0;
  #lastActivity: number;

  constructor(input: Readable, output: Writable, options: ClientChannelOptions) {
    this.#input = input;
    this.#options = options;
    this.#lastActivity = options.now();
    this.closed = new Promise<void>((resolve) => {
      this.#resolveClosed = resolve;
    });
    const { maxFrameBytes } = options;
    this.#writer = new FrameWriter(output, {
      ...(maxFrameBytes !== undefined ? { maxFrameBytes } : {}),
      onClose: () => options.onLost('the channel to the host closed'),
    });
  }

  /** Starts reading: every valid host frame goes to `onFrame`. */
  read(onFrame: (frame: HostFrame) => void): void {
    const { maxFrameBytes, onProtocolError, onLost, now } = this.#options;
    this.#detachInput = readFrames(this.#input, {
      ...(maxFrameBytes !== undefined ? { maxFrameBytes } : {}),
      onFrame: (value) => {
        this.#lastActivity = now();
        const parsed = parseHostFrame(value);
        if (parsed.kind === 'frame') onFrame(parsed.frame);
        else if (parsed.kind === 'invalid') {
          onProtocolError?.(`invalid ${JSON.stringify(parsed.type)} frame: ${parsed.issues}`);
        }
      },
      onError: (error) => {
        this.#lastActivity = now();
        onProtocolError?.(`${error.code}: ${error.message}`);
      },
      onEnd: (reason, error) => {
        this.#inputEnded = true;
        onLost(
          reason === 'eof'
            ? 'the host closed the channel'
            : `read error: ${error?.message ?? 'unknown'}`,
        );
      },
    });
  }

  get isClosed(): boolean {
    return this.#closed;
  }

  /** Whether reading is paused for unconsumed events (quiet time then is ours, not the host's). */
  get paused(): boolean {
    return this.#paused;
  }

  /** Milliseconds since the host was last heard from (or reading last resumed). */
  get quietMs(): number {
    return this.#options.now() - this.#lastActivity;
  }

  /** Starts the quiet time over (used while reading is paused). */
  markActive(): void {
    this.#lastActivity = this.#options.now();
  }

  /**
   * Queues a frame for the host; nothing once the channel is closed. Throws (nothing queued)
   * `ERR_FRAME_TOO_LARGE` for a frame over `maxFrameBytes`, or JSON's own error for a value JSON
   * cannot encode: the caller decides what a frame it could not send means.
   */
  readonly send = (frame: object): void => {
    if (!this.#closed) this.#writer.write(frame);
  };

  /** Flow control: `count` events were buffered (positive) or taken or dropped (negative). */
  change(count: number): void {
    const { maxBufferedEvents } = this.#options;
    this.#bufferedEvents += count;
    if (!this.#paused && this.#bufferedEvents >= maxBufferedEvents) {
      this.#paused = true;
      this.#input.pause();
    } else if (this.#paused && this.#bufferedEvents <= maxBufferedEvents / 2) {
      this.#paused = false;
      this.markActive();
      this.#input.resume();
    }
  }

  /** Flushes what was sent, then waits for the host to close the channel, `timeoutMs` at most. */
  async awaitHostClose(timeoutMs: number): Promise<void> {
    const { timers } = this.#options;
    await this.#writer.flush();
    let handle: unknown;
    await Promise.race([
      this.closed,
      new Promise<void>((resolve) => {
        handle = timers.setTimeout(resolve, timeoutMs);
      }),
    ]);
    timers.clearTimeout(handle);
  }

  /**
   * First half of closing: nothing is sent or read from now on. Returns false when the channel
   * was closed already. Call {@link finishClose} once the client has settled what was waiting.
   */
  beginClose(): boolean {
    if (this.#closed) return false;
    this.#closed = true;
    this.#detachInput();
    return true;
  }

  /** Ends the output once flushed, then lets go of the input and resolves {@link closed}. */
  finishClose(): void {
    if (this.#paused) this.#input.resume();
    void this.#writer.end(true).finally(() => {
      // A host that went silent may never close its side: do not keep its stream open for it.
      if (!this.#inputEnded) this.#input.destroy();
      this.#resolveClosed();
    });
  }
}
