import type { ClientChannel } from './client-channel.js';
import { RunnerHostError } from './errors.js';
import type { PongFrame } from './frames.js';
import type { HostTimers } from './host.js';

export interface ClientLivenessOptions {
  channel: Pick<ClientChannel, 'isClosed' | 'paused' | 'quietMs' | 'markActive' | 'send'>;
  timers: HostTimers;
  now: () => number;
  /** A host silent this long while something is pending is lost. */
  idleTimeoutMs: number;
  /** How often a quiet host is pinged while something is pending. */
  pingIntervalMs: number;
  welcomed: () => boolean;
  /** Whether anything besides pings waits for the host (the welcome, a run). */
  waiting: () => boolean;
  /** Declares the host lost. */
  lose: (reason: string) => void;
}

interface PendingPing {
  sentAt: number;
  resolve: (ms: number) => void;
  reject: (error: Error) => void;
}

/**
 * Whether the host is still there: the caller's pings and their round trips, and, while
 * anything waits for the host, pings to a quiet host and the idle timeout that declares it lost.
 * Reading paused for unconsumed events does not count as the host being quiet.
 */
export class ClientLiveness {
  readonly #options: ClientLivenessOptions;
  readonly #pings = new Map<string, PendingPing>();
  #counter = 0;
  #timer: unknown;

  constructor(options: ClientLivenessOptions) {
    this.#options = options;
  }

  /** Round trip of one `ping`, in milliseconds. Rejects with `ERR_CHANNEL_CLOSED`. */
  ping(): Promise<number> {
    const { channel, now } = this.#options;
    if (channel.isClosed) {
      return Promise.reject(new RunnerHostError('ERR_CHANNEL_CLOSED', 'the channel is closed'));
    }
    this.#counter += 1;
    const id = `p${this.#counter}`;
    return new Promise<number>((resolve, reject) => {
      this.#pings.set(id, { sentAt: now(), resolve, reject });
      channel.send({ type: 'ping', id });
      this.arm();
    });
  }

  /** The host answered a ping (ours, or one of the idle pings, which nobody awaits). */
  pong(frame: PongFrame): void {
    const id = frame.id === undefined ? undefined : String(frame.id);
    const ping = id === undefined ? undefined : this.#pings.get(id);
    if (ping !== undefined && id !== undefined) {
      this.#pings.delete(id);
      ping.resolve(this.#options.now() - ping.sentAt);
    }
  }

  /** Starts the watch if something is pending and it is not running. */
  arm(): void {
    const { channel, timers, pingIntervalMs } = this.#options;
    if (this.#timer !== undefined || channel.isClosed || !this.#pending()) return;
    this.#timer = timers.setTimeout(() => this.#tick(), pingIntervalMs);
  }

  /** The channel is closed: stop watching, and fail the pings still waiting. */
  stop(reason: string): void {
    this.#options.timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const ping of this.#pings.values()) {
      ping.reject(new RunnerHostError('ERR_CHANNEL_CLOSED', reason));
    }
    this.#pings.clear();
  }

  #pending(): boolean {
    return this.#options.waiting() || this.#pings.size > 0;
  }

  #tick(): void {
    const { channel, idleTimeoutMs, pingIntervalMs, welcomed, lose } = this.#options;
    this.#timer = undefined;
    if (channel.isClosed || !this.#pending()) return;
    const quiet = channel.quietMs;
    if (channel.paused) {
      channel.markActive();
    } else if (quiet >= idleTimeoutMs) {
      lose(`no frame from the host for ${Math.round(quiet)} ms`);
      return;
    } else if (quiet >= pingIntervalMs && welcomed()) {
      this.#counter += 1;
      channel.send({ type: 'ping', id: `idle-${this.#counter}` });
    }
    this.arm();
  }
}
