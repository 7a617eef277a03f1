import type { RunnerEngine } from './engine.js';
import {
  SUPPORTED_PROTOCOLS,
  type Capabilities,
  type FatalFrame,
  type HelloFrame,
  type PeerInfo,
  type WelcomeFrame,
} from './frames.js';
import type { HostTimers } from './host.js';

/** Where a host session stands: before `hello`, serving, or stopping for good. */
export type SessionPhase = 'awaiting_hello' | 'ready' | 'stopping';

/** What a `hello` calls for: a `welcome`, a `fatal` that ends the session, or nothing. */
export type HelloReply =
  | { kind: 'welcome'; frame: WelcomeFrame }
  | { kind: 'fatal'; frame: FatalFrame }
  | { kind: 'repeated' };

/**
 * The session's phase and what its handshake agreed (README "Rules in detail", Handshake): the
 * first `hello` with a common version makes the session ready, one without ends it, and any
 * later `hello` changes nothing. A session may also be given a deadline for its handshake.
 */
export class HostHandshake {
  #phase: SessionPhase = 'awaiting_hello';
  #capabilities: Capabilities = {};
  #deadline: { timers: HostTimers; handle: unknown } | undefined;
  readonly #engines: readonly RunnerEngine<unknown>[];
  readonly #host: PeerInfo;

  constructor(engines: readonly RunnerEngine<unknown>[], host: PeerInfo) {
    this.#engines = engines;
    this.#host = host;
  }

  get phase(): SessionPhase {
    return this.#phase;
  }

  /** Whether the driver announced it answers questions (else they are declined for it). */
  get driverAnswersQuestions(): boolean {
    return this.#capabilities.questions === true;
  }

  /**
   * Calls `onExpired` with the `fatal{code:"hello_timeout"}` to send if the session is still
   * waiting for its `hello` after `ms`. A connection that never completes a line holds its slot
   * of a socket server for as long as it stays open: this bounds that in time. The deadline is
   * absolute (frames other than a `hello`, such as pings, do not extend it) and is cleared by
   * the `welcome` and by {@link stop}.
   */
  expectHelloWithin(ms: number, timers: HostTimers, onExpired: (frame: FatalFrame) => void): void {
    this.#clearDeadline();
    const handle = timers.setTimeout(() => {
      this.#deadline = undefined;
      if (this.#phase !== 'awaiting_hello') return;
      onExpired({
        type: 'fatal',
        code: 'hello_timeout',
        message: `no "hello" within ${ms} ms of connecting; closing`,
      });
    }, ms);
    this.#deadline = { timers, handle };
  }

  hello(frame: HelloFrame): HelloReply {
    if (this.#phase !== 'awaiting_hello') return { kind: 'repeated' };
    const common = SUPPORTED_PROTOCOLS.filter((v) => frame.protocols.includes(v));
    if (common.length === 0) {
      return {
        kind: 'fatal',
        frame: {
          type: 'fatal',
          code: 'unsupported_protocol',
          message: `no common protocol version: host speaks ${SUPPORTED_PROTOCOLS.join(', ')}, driver offered ${frame.protocols.join(', ') || 'none'}`,
        },
      };
    }
    this.#phase = 'ready';
    this.#clearDeadline();
    this.#capabilities = frame.capabilities ?? {};
    return {
      kind: 'welcome',
      frame: {
        type: 'welcome',
        protocol: Math.max(...common),
        host: this.#host,
        engines: this.#engines.map((e) => ({ id: e.id, displayName: e.displayName })),
        capabilities: { questions: true },
      },
    };
  }

  /** From now on the session only winds down: no frame of the driver is acted on. */
  stop(): void {
    this.#phase = 'stopping';
    // A pending timer would also keep a stdio host's process alive after its session ended.
    this.#clearDeadline();
  }

  #clearDeadline(): void {
    if (this.#deadline === undefined) return;
    this.#deadline.timers.clearTimeout(this.#deadline.handle);
    this.#deadline = undefined;
  }
}
