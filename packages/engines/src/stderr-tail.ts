/** Keeps the last `maxBytes` bytes of a stream (a child's stderr), whatever its length. */
export class StderrTail {
  readonly #maxBytes: number;
  #chunks: Buffer[] = [];
  #bytes = 0;
  #dropped = false;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  push(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#bytes += chunk.length;
    while (this.#bytes > this.#maxBytes && this.#chunks.length > 0) {
      const first = this.#chunks[0] as Buffer;
      const excess = this.#bytes - this.#maxBytes;
      this.#dropped = true;
      if (first.length <= excess) {
        this.#chunks.shift();
        this.#bytes -= first.length;
      } else {
        this.#chunks[0] = first.subarray(excess);
        this.#bytes -= excess;
      }
    }
  }

  /** The tail as text; `…` marks that earlier output was dropped. */
  text(): string {
    const text = Buffer.concat(this.#chunks).toString('utf8');
    return this.#dropped ? `…${text}` : text;
  }
}
