import { ScrubbedTail, SecretSet } from '@packwarden/runner-host';

/**
 * Keeps the last `maxBytes` bytes of a stream (a child's stderr) for a failure message, scrubbed
 * of `secrets` **before** it is cut: the window is cut only in scrubbed text, so a tail can never
 * start with the last characters of a secret whose beginning was dropped, and a secret written
 * in several pieces is still replaced whole (runner-host README, "Scrubbing streams").
 */
export class StderrTail {
  readonly #tail: ScrubbedTail;

  /** Without `secrets`, nothing is scrubbed (the tail of a stream that holds no secret). */
  constructor(maxBytes: number, secrets: SecretSet = new SecretSet()) {
    this.#tail = new ScrubbedTail(secrets, maxBytes);
  }

  push(chunk: Buffer | string): void {
    this.#tail.push(chunk);
  }

  /** The scrubbed tail as text; `…` marks that earlier output was dropped. */
  text(): string {
    return this.#tail.text();
  }
}
