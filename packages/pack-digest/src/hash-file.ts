import type * as FsModule from 'node:fs';
import type * as CryptoModule from 'node:crypto';

export type HashedFile =
  | { ok: true; sha256: string; size: number; executable: boolean }
  | { ok: false; reason: 'changed' | 'io' | 'too-large'; message: string };

/**
 * The bytes of content every thread hashing one pack may read together: `used[0]` counts the
 * sizes of the files claimed so far (shared memory, so that workers and the calling thread count
 * together), `max` is `maxTotalBytes`.
 */
export interface ByteBudget {
  used: BigInt64Array;
  max: number;
}

/** The file was opened and judged, but is larger than the caller's `deferAboveBytes`: not read. */
export interface DeferredFile {
  ok: false;
  reason: 'deferred';
  size: number;
}

/**
 * Hashes one regular file without following a symlink and without blocking on a FIFO that was
 * swapped in after the walk: open with O_NOFOLLOW | O_NONBLOCK, then trust only fstat.
 *
 * This function runs both in the calling thread and, through its source text, inside hashing
 * workers (see hash-pool.ts), so it must reference nothing but its parameters and globals.
 *
 * `deferAboveBytes` lets the calling thread learn a file's size from the fstat it needs anyway
 * (instead of a separate lstat pass over every file) and hand a large file to the hashing
 * threads unread; the thread that hashes it later opens and judges it again from scratch.
 *
 * `budget` bounds the bytes all threads read for one pack: a file whose size would take the
 * total past it is refused (`too-large`) from its fstat, before a byte of it is read.
 */
export function hashRegularFileSync(
  fs: typeof FsModule,
  crypto: typeof CryptoModule,
  absolutePath: string,
  buffer: Buffer,
  deferAboveBytes?: undefined,
  budget?: ByteBudget,
): HashedFile;
export function hashRegularFileSync(
  fs: typeof FsModule,
  crypto: typeof CryptoModule,
  absolutePath: string,
  buffer: Buffer,
  deferAboveBytes: number,
  budget?: ByteBudget,
): HashedFile | DeferredFile;
export function hashRegularFileSync(
  fs: typeof FsModule,
  crypto: typeof CryptoModule,
  absolutePath: string,
  buffer: Buffer,
  deferAboveBytes?: number,
  budget?: ByteBudget,
): HashedFile | DeferredFile {
  const flags =
    fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0);
  let fd: number;
  try {
    fd = fs.openSync(absolutePath, flags);
  } catch (error) {
    const code = (error as { code?: string }).code;
    // ELOOP: it is a symlink now; ENOENT: it is gone. Either way the tree moved under us.
    const changed = code === 'ELOOP' || code === 'ENOENT' || code === 'ENOTDIR';
    return {
      ok: false,
      reason: changed ? 'changed' : 'io',
      message: String((error as Error).message),
    };
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile())
      return { ok: false, reason: 'changed', message: 'no longer a regular file' };
    if (deferAboveBytes !== undefined && stat.size > deferAboveBytes)
      return { ok: false, reason: 'deferred', size: stat.size };
    if (budget !== undefined) {
      // One file over the bound is refused before it is counted: sizes up to 2^63 added to the
      // shared 64-bit total could wrap it below the bound.
      const size = BigInt(stat.size);
      if (stat.size > budget.max || Number(Atomics.add(budget.used, 0, size) + size) > budget.max) {
        return {
          ok: false,
          reason: 'too-large',
          message: `${stat.size} bytes take the pack's content past ${budget.max} bytes`,
        };
      }
    }
    const executable = (stat.mode & 0o100) !== 0;
    const changed = (size: number): HashedFile => ({
      ok: false,
      reason: 'changed',
      message: `size changed while reading (${stat.size} → ${size} bytes)`,
    });
    // Most pack files fit one read: hash them in one call and skip the read that finds EOF.
    const first = fs.readSync(fd, buffer, 0, buffer.length, null);
    if (first < buffer.length) {
      if (first !== stat.size) return changed(first);
      return {
        ok: true,
        sha256: crypto.hash('sha256', buffer.subarray(0, first), 'hex'),
        size: first,
        executable,
      };
    }
    const hash = crypto.createHash('sha256').update(buffer);
    let size = first;
    for (;;) {
      const read = fs.readSync(fd, buffer, 0, buffer.length, null);
      if (read === 0) break;
      hash.update(read === buffer.length ? buffer : buffer.subarray(0, read));
      size += read;
      // Growing while it is read: refused, and never read past what the budget was told.
      if (size > stat.size) return changed(size);
    }
    if (size !== stat.size) return changed(size);
    return { ok: true, sha256: hash.digest('hex'), size, executable };
  } catch (error) {
    return { ok: false, reason: 'io', message: String((error as Error).message) };
  } finally {
    fs.closeSync(fd);
  }
}
