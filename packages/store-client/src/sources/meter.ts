import { createHash } from 'node:crypto';
import { createReadStream, type WriteStream } from 'node:fs';
import { pipeline, Transform, type Readable, type TransformCallback } from 'node:stream';
import { StoreError } from '../errors.js';
import type { FetchedResponse } from '../http.js';

/** Hashes and counts what passes; optionally writes it to a cache file; checks size and hash at the end. */
export class ArchiveMeter extends Transform {
  private readonly hash = createHash('sha256');
  bytes = 0;
  sha256 = '';

  constructor(
    private readonly expected: { size?: number; sha256?: string; maxBytes: number },
    private readonly onBytes: (bytes: number) => void,
    private readonly sink?: WriteStream,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _e: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    const limit = this.expected.size ?? this.expected.maxBytes;
    if (this.bytes > limit) {
      return callback(
        this.expected.size !== undefined
          ? new StoreError(
              'ERR_DOWNLOAD_SIZE_MISMATCH',
              `the archive is larger than the ${limit} bytes the index states`,
            )
          : new StoreError('ERR_DOWNLOAD_TOO_LARGE', `the archive is larger than ${limit} bytes`),
      );
    }
    this.hash.update(chunk);
    this.onBytes(this.bytes);
    const sink = this.sink;
    // The cache copy is best effort: a failing sink is dropped, never waited on.
    if (sink && !sink.destroyed && !sink.write(chunk)) {
      const resume = () => {
        sink.off('drain', resume);
        sink.off('close', resume);
        callback(null, chunk);
      };
      sink.once('drain', resume);
      sink.once('close', resume);
      return;
    }
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    this.sha256 = this.hash.digest('hex');
    if (this.expected.size !== undefined && this.bytes !== this.expected.size) {
      return callback(
        new StoreError(
          'ERR_DOWNLOAD_SIZE_MISMATCH',
          `the archive has ${this.bytes} bytes, the index states ${this.expected.size}`,
        ),
      );
    }
    if (this.expected.sha256 !== undefined && this.sha256 !== this.expected.sha256) {
      return callback(
        new StoreError(
          'ERR_DOWNLOAD_INTEGRITY',
          `the archive's SHA-256 is ${this.sha256}, the index states ${this.expected.sha256}`,
        ),
      );
    }
    callback();
  }
}

/** An archive being read, the same for every kind of store (see ./index.ts). */
export interface Opened {
  stream: Readable;
  meter: ArchiveMeter;
  /** Called after a successful extraction: keeps the cached copy. */
  commit: () => Promise<void>;
  discard: () => Promise<void>;
  fromCache: boolean;
}

export async function sha256File(path: string): Promise<string | undefined> {
  try {
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
    return hash.digest('hex');
  } catch {
    return undefined;
  }
}

/**
 * `from` → `to`, wired in the same tick the streams are created: an error or an early close of
 * either tears both down, and an error raised before anyone reads `to` is kept on it (its
 * reader sees it) instead of being an unhandled `error` event that kills the process (issue 9.4).
 */
export function forward(from: Readable, to: ArchiveMeter): ArchiveMeter {
  to.on('error', () => undefined);
  pipeline(from, to, () => undefined);
  return to;
}

/**
 * `fetch` decodes a `Content-Encoding` on its own, so an encoded archive would reach the meter
 * as other bytes than the index's `size` and `sha256` describe: refused before reading it.
 */
export function refuseContentEncoding(fetched: FetchedResponse): void {
  const encoding = fetched.response.headers.get('content-encoding')?.trim().toLowerCase();
  if (encoding === undefined || encoding === '' || encoding === 'identity') return;
  fetched.controller.abort();
  throw new StoreError(
    'ERR_DOWNLOAD_CONTENT_ENCODING',
    `${fetched.url.href} was served with Content-Encoding: ${encoding.slice(0, 40)}; archives must be served as stored (no Content-Encoding)`,
    { subject: fetched.url.href },
  );
}

/** Asked of every archive server: the bytes as stored, which the index's size and hash describe. */
export const IDENTITY = { 'accept-encoding': 'identity' };

/** Reports download progress: bytes so far, and the total when the index states it. */
export type DownloadReport = (bytes: number, total?: number) => void;

/** What every strategy does once reading ends: nothing to keep, nothing to remove. */
export const nothing = (): Promise<void> => Promise.resolve();
