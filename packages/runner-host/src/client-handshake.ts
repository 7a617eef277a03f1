import type { ConnectRunnerOptions } from './client.js';
import { RunnerHostError } from './errors.js';
import {
  SUPPORTED_PROTOCOLS,
  type FatalFrame,
  type HelloFrame,
  type WelcomeFrame,
} from './frames.js';

/** What the driver offers in its `hello` (defaults as `ConnectRunnerOptions` documents them). */
export type HelloOffer = Pick<ConnectRunnerOptions, 'client' | 'protocols' | 'capabilities'>;

/**
 * The driver's side of the handshake (README "Rules in detail", Handshake): the `hello` it
 * sends, and the `welcome` it waits for, which rejects with `ERR_HANDSHAKE` when the host
 * refuses (`fatal`) or the channel is lost first.
 */
export class ClientHandshake {
  readonly welcome: Promise<WelcomeFrame>;
  #welcomed = false;
  #resolve!: (frame: WelcomeFrame) => void;
  #reject!: (error: Error) => void;

  constructor() {
    this.welcome = new Promise<WelcomeFrame>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // A caller that never looks at `welcome` must not get an unhandled rejection.
    this.welcome.catch(() => {});
  }

  get welcomed(): boolean {
    return this.#welcomed;
  }

  hello(offer: HelloOffer): HelloFrame {
    return {
      type: 'hello',
      protocols: [...(offer.protocols ?? SUPPORTED_PROTOCOLS)],
      capabilities: offer.capabilities ?? { questions: true },
      ...(offer.client !== undefined ? { client: offer.client } : {}),
    };
  }

  /** The host's `welcome`; only the first counts. */
  accept(frame: WelcomeFrame): void {
    if (this.#welcomed) return;
    this.#welcomed = true;
    this.#resolve(frame);
  }

  /** The host sent `fatal`: before a welcome, that is a refusal. */
  refuse(frame: FatalFrame): void {
    if (this.#welcomed) return;
    this.#reject(
      new RunnerHostError('ERR_HANDSHAKE', `host refused: ${frame.code}: ${frame.message}`),
    );
  }

  /** The channel is gone: a welcome still awaited will never come. */
  lost(reason: string): void {
    if (!this.#welcomed)
      this.#reject(new RunnerHostError('ERR_HANDSHAKE', `no welcome: ${reason}`));
  }
}
