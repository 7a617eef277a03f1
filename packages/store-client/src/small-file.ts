import {
  readBoundedFile,
  type BoundedFile,
  type ReadBoundedFileOptions,
} from '@packwarden/pack-manifest/fs';

export type SmallFile =
  | { ok: true; bytes: Buffer }
  | {
      ok: false;
      /** `readBoundedFile`'s outcome: `absent`, `symlink`, `too-large`, `failed`, … */
      kind: Exclude<BoundedFile['kind'], 'read'>;
      /** Why, in a few words, for a message. */
      problem: string;
      cause?: unknown;
    };

/**
 * A small file that someone other than this process may have written (a store's index, an
 * artifact's signature file, the state folder's `current.txt`, locks and caches), read through
 * `readBoundedFile`: never through a symlink unless `followSymlinks`, never a FIFO or device, and
 * never more than `maxBytes`.
 */
export function readSmallFile(
  file: string,
  maxBytes: number,
  options: ReadBoundedFileOptions = {},
): SmallFile {
  const read = readBoundedFile(file, maxBytes, options);
  switch (read.kind) {
    case 'read':
      return { ok: true, bytes: read.bytes };
    case 'absent':
      return { ok: false, kind: read.kind, problem: 'it does not exist', cause: read.cause };
    case 'symlink':
      return { ok: false, kind: read.kind, problem: 'it is a symlink, which is not followed' };
    case 'not-regular-file':
      return { ok: false, kind: read.kind, problem: 'it is not a regular file' };
    case 'too-large':
      return { ok: false, kind: read.kind, problem: `it is larger than ${maxBytes} bytes` };
    case 'grew':
      return {
        ok: false,
        kind: read.kind,
        problem: `it grew past ${maxBytes} bytes while it was read`,
      };
    case 'failed':
      return {
        ok: false,
        kind: read.kind,
        problem: (read.cause as Error)?.message ?? String(read.cause),
        cause: read.cause,
      };
  }
}
