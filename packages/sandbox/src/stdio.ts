import { Writable } from 'node:stream';
import type { SecretSet } from '@packwarden/runner-host';

type WriteCallback = (error?: Error | null) => void;

/**
 * Makes the protocol the only writer of stdout: returns a stream over the real stdout for the
 * host, and sends everything else written to process.stdout (console.log of an in-process
 * engine included) to stderr. Everything reaching stderr is scrubbed of the secrets seen so far
 * (docs/sandbox.md, "Engine output never reaches the protocol channel").
 */
export function takeOverStdio(secrets: SecretSet): Writable {
  const realStdoutWrite = process.stdout.write.bind(process.stdout) as (
    chunk: Uint8Array | string,
    callback: WriteCallback,
  ) => boolean;
  const realStderrWrite = process.stderr.write.bind(process.stderr) as (
    chunk: string,
    callback?: WriteCallback,
  ) => boolean;
  const toStderr = (
    chunk: Uint8Array | string,
    encoding?: BufferEncoding | WriteCallback,
    callback?: WriteCallback,
  ): boolean => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    const done = typeof encoding === 'function' ? encoding : callback;
    return realStderrWrite(secrets.scrubText(text), done);
  };
  process.stderr.write = toStderr as typeof process.stderr.write;
  process.stdout.write = toStderr as typeof process.stdout.write;
  // Write errors (a closed pipe) reach the host through the channel stream below.
  process.stdout.on('error', () => {});
  return new Writable({
    highWaterMark: 64 * 1024,
    write(chunk: Buffer, _encoding, callback) {
      realStdoutWrite(chunk, (error) => callback(error ?? null));
    },
  });
}
