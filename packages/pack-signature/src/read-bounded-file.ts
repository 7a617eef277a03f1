import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/** What `readBoundedFile` found at a path. Only `failed` carries an OS error. */
export type BoundedFile =
  | { kind: 'read'; bytes: Buffer }
  | { kind: 'absent' }
  /** A symlink, never followed. */
  | { kind: 'symlink' }
  /** A folder, FIFO, socket or device. */
  | { kind: 'not-regular-file' }
  /** `fstat` says more than the bound: refused before anything is read. */
  | { kind: 'too-large'; size: number }
  /** More bytes than `fstat` said arrived while reading. */
  | { kind: 'grew' }
  /** The OS refused to open or read it (permissions, I/O, a socket, …). */
  | { kind: 'failed'; step: 'open' | 'read'; cause: unknown };

/**
 * Reads a small file from a folder someone else may have written (a pack's `pack.sig`, an
 * engine's `engine.sig`, `engine.manifest.json` and `package.json`), by the rules of the
 * strict pre-parser in the README: never through a symlink (`O_NOFOLLOW`), never blocking on a
 * FIFO (`O_NONBLOCK`), only a regular file by `fstat` on the open descriptor, a file above
 * `maxBytes` refused from its size, and at most one byte past what `fstat` said read, so a
 * file that grows meanwhile is still bounded.
 *
 * Synchronous on purpose: the file is small and opened with `O_NONBLOCK`, so each call returns
 * in microseconds, where four trips through libuv's thread pool cost more than the read itself
 * and, on a busy machine, wait for a free core.
 */
export function readBoundedFile(file: string, maxBytes: number): BoundedFile {
  let fd: number;
  try {
    fd = openSync(
      file,
      constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0),
    );
  } catch (cause) {
    const code = (cause as { code?: string }).code;
    if (code === 'ENOENT') return { kind: 'absent' };
    if (code === 'ELOOP') return { kind: 'symlink' };
    return { kind: 'failed', step: 'open', cause };
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return { kind: 'not-regular-file' };
    if (stats.size > maxBytes) return { kind: 'too-large', size: stats.size };
    const buffer = Buffer.allocUnsafe(stats.size + 1);
    let length = 0;
    while (length < buffer.length) {
      const bytesRead = readSync(fd, buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > stats.size) return { kind: 'grew' };
    return { kind: 'read', bytes: buffer.subarray(0, length) };
  } catch (cause) {
    return { kind: 'failed', step: 'read', cause };
  } finally {
    try {
      closeSync(fd);
    } catch {
      // Nothing was written through it; a failed close changes nothing about what was read.
    }
  }
}
