import type { RunnerEngine } from './engine.js';
import {
  SUPPORTED_PROTOCOLS,
  type Capabilities,
  type FatalFrame,
  type HelloFrame,
  type PeerInfo,
  type WelcomeFrame,
} from './frames.js';

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
 * later `hello` changes nothing.
 */
export class HostHandshake {
  #phase: SessionPhase = 'awaiting_hello';
  #capabilities: Capabilities = {};
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
  }
}
