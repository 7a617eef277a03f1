import { Writable } from 'node:stream';
import { StreamScrubber, type SecretSet } from '@packwarden/runner-host';

type WriteCallback = (error?: Error | null) => void;

export interface TakeOverStdioOptions {
  /**
   * Milliseconds without a write after which text held back as a possible secret prefix is
   * released (scrubbed again). Default 250. Everything held is released at process exit.
   */
  idleFlushMs?: number;
  /** Timer seam for tests. */
  timers?: {
    setTimeout(callback: () => void, ms: number): unknown;
    clearTimeout(handle: unknown): void;
  };
}

/**
 * Makes the protocol the only writer of stdout: returns a stream over the real stdout for the
 * host, and sends everything else written to process.stdout (console output) to stderr.
 * Everything reaching stderr goes through one runner-host `StreamScrubber` across writes, so a
 * secret written in pieces never appears whole (docs/sandbox.md, "Engine output never reaches
 * the protocol channel"); what it holds back is released after a short idle and at exit.
 */
export function takeOverStdio(secrets: SecretSet, options: TakeOverStdioOptions = {}): Writable {
  const idleFlushMs = options.idleFlushMs ?? 250;
  const timers = options.timers ?? {
    setTimeout: (callback: () => void, ms: number) => {
      const handle = setTimeout(callback, ms);
      handle.unref();
      return handle;
    },
    clearTimeout: (handle: unknown) => clearTimeout(handle as NodeJS.Timeout),
  };
  const realStdoutWrite = process.stdout.write.bind(process.stdout) as (
    chunk: Uint8Array | string,
    callback: WriteCallback,
  ) => boolean;
  const realStderrWrite = process.stderr.write.bind(process.stderr) as (
    chunk: string,
    callback?: WriteCallback,
  ) => boolean;
  const scrubber = new StreamScrubber(secrets);
  let idle: unknown;
  const flush = () => {
    idle = undefined;
    // Scrubbed again: a secret may have been added since the text was held.
    const rest = secrets.scrubText(scrubber.flush());
    if (rest !== '') realStderrWrite(rest);
  };
  const toStderr = (
    chunk: Uint8Array | string,
    encoding?: BufferEncoding | WriteCallback,
    callback?: WriteCallback,
  ): boolean => {
    const done = typeof encoding === 'function' ? encoding : callback;
    const safe = scrubber.write(chunk);
    if (idle !== undefined) timers.clearTimeout(idle);
    idle = scrubber.heldLength > 0 ? timers.setTimeout(flush, idleFlushMs) : undefined;
    if (safe === '') {
      if (done) queueMicrotask(() => done(null));
      return true;
    }
    return realStderrWrite(safe, done);
  };
  process.stderr.write = toStderr as typeof process.stderr.write;
  process.stdout.write = toStderr as typeof process.stdout.write;
  process.once('exit', flush);
  // Write errors (a closed pipe) reach the host through the channel stream below.
  process.stdout.on('error', () => {});
  return new Writable({
    highWaterMark: 64 * 1024,
    write(chunk: Buffer, _encoding, callback) {
      realStdoutWrite(chunk, (error) => callback(error ?? null));
    },
  });
}
