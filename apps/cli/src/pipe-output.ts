import { writeSync } from 'node:fs';
import type { CliOutput } from './io.js';

/** Node's stream for the same descriptor (`process.stdout` or `process.stderr`). */
export interface ProcessStream {
  /** The stream, if something has created it already. */
  current(): { write(chunk: Uint8Array | string): unknown } | undefined;
  /** The stream, created now if need be. */
  create(): { write(chunk: Uint8Array | string): unknown };
}

/**
 * Standard output or standard error on a pipe or a socket, written with write(2) as each chunk
 * comes. There, `process.stdout` is a `net.Socket`: building it loads node:net and opens a libuv
 * pipe, more than a millisecond of a cold `pack verify` (bench/README.md, "CLI start-up"). That
 * socket also writes each chunk at once, and queues only what the descriptor refuses, so the
 * bytes and their order are the same.
 *
 * Node's stream takes over at the first write the descriptor refuses (a full non-blocking pipe, a
 * reader that closed) with the bytes not yet written, and keeps every later write, so those
 * cases go exactly as they went before: a full pipe is waited for, a closed reader is the EPIPE
 * bin.ts handles. It also takes over as soon as it exists (`stream.current()`), whoever made it,
 * so that writes never go around it.
 */
export class PipeOutput implements CliOutput {
  readonly #fd: number;
  readonly #stream: ProcessStream;

  constructor(fd: number, stream: ProcessStream) {
    this.#fd = fd;
    this.#stream = stream;
  }

  write(chunk: Uint8Array | string): unknown {
    const stream = this.#stream.current();
    if (stream !== undefined) return stream.write(chunk);
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    let written = 0;
    try {
      while (written < bytes.length) written += writeSync(this.#fd, bytes, written);
      return true;
    } catch {
      return this.#stream.create().write(bytes.subarray(written));
    }
  }
}
