import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';

/**
 * What `readBoundedFile` found at a path. `stats` is `fstat` of the descriptor that was read, so
 * a caller's own checks (permissions, owner) are about the very file whose bytes it gets.
 */
export type BoundedFile =
  | { kind: 'read'; bytes: Buffer; stats: Stats }
  /** Nothing at the path (`ENOENT`). */
  | { kind: 'absent'; cause: unknown }
  /** A symlink, never followed (`ELOOP` from `O_NOFOLLOW`); never with `followSymlinks`. */
  | { kind: 'symlink'; cause: unknown }
  /** A folder, FIFO, socket or device. */
  | { kind: 'not-regular-file'; stats: Stats }
  /** `fstat` says more than the bound: refused before anything is read. */
  | { kind: 'too-large'; size: number; stats: Stats }
  /** More bytes than `fstat` said arrived while reading. */
  | { kind: 'grew'; stats: Stats }
  /**
   * The OS refused to open or read it (permissions, I/O, a path through a file, …), or it gave
   * fewer bytes than `fstat` said (`cause.code` `ERR_FILE_SHRANK`): a file cut short meanwhile.
   */
  | { kind: 'failed'; step: 'open' | 'read'; cause: unknown };

export interface ReadBoundedFileOptions {
  /**
   * Open the file a symlink points to. Default `false`: a symlink is `{ kind: 'symlink' }`. Only
   * for a file the user names and may deliberately link (a mounted secret, a lockfile), never for
   * a file inside a folder someone else wrote.
   */
  followSymlinks?: boolean;
}

/**
 * packwarden's one way to read a small file that may be hostile (a pack's `agent.yaml` and
 * `pack.sig`, an engine's metadata, key files, caches): never through a symlink (`O_NOFOLLOW`),
 * never blocking on a FIFO (`O_NONBLOCK`), only a regular file by `fstat` on the open descriptor,
 * a file above `maxBytes` refused from its size, and at most one byte past what `fstat` said read,
 * so a file that grows meanwhile is refused (`grew`) instead of read torn or unbounded, and one
 * that gives fewer bytes than `fstat` said is `failed` (`ERR_FILE_SHRANK`), never a prefix.
 *
 * Synchronous on purpose: the file is small and opened with `O_NONBLOCK`, so each call returns in
 * microseconds, where four trips through libuv's thread pool cost more than the read itself and,
 * on a busy machine, wait for a free core. Never throws: every outcome is a `BoundedFile`, and each
 * caller maps it to its own package's error.
 */
export function readBoundedFile(
  file: string,
  maxBytes: number,
  options: ReadBoundedFileOptions = {},
): BoundedFile {
  const noFollow = options.followSymlinks === true ? 0 : (constants.O_NOFOLLOW ?? 0);
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | noFollow | (constants.O_NONBLOCK ?? 0));
  } catch (cause) {
    const code = (cause as { code?: string }).code;
    if (code === 'ENOENT') return { kind: 'absent', cause };
    if (code === 'ELOOP' && noFollow !== 0) return { kind: 'symlink', cause };
    return { kind: 'failed', step: 'open', cause };
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return { kind: 'not-regular-file', stats };
    if (stats.size > maxBytes) return { kind: 'too-large', size: stats.size, stats };
    const buffer = Buffer.allocUnsafe(stats.size + 1);
    let length = 0;
    while (length < buffer.length) {
      const bytesRead = readSync(fd, buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > stats.size) return { kind: 'grew', stats };
    if (length < stats.size) {
      // Fewer bytes than fstat said: cut short while read (or a file that lies about its size,
      // as sysfs does). A prefix of a manifest can still parse, to something it never said.
      const cause = Object.assign(
        new Error(`${file} returned ${length} of the ${stats.size} bytes fstat said it holds`),
        { code: 'ERR_FILE_SHRANK' },
      );
      return { kind: 'failed', step: 'read', cause };
    }
    return { kind: 'read', bytes: buffer.subarray(0, length), stats };
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
