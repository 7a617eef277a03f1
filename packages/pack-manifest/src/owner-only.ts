import { constants } from 'node:fs';
import { lstat, mkdir, open } from 'node:fs/promises';

// The owner-only rules of every cache packwarden keeps under the user's home (trust-root's key
// sets, store-client's index), in one place: two copies had already drifted (one tightened a
// folder left group-writable by a umask of 002, the other silently never used its cache again).

/** What the checks read from `fstat` / `lstat`. */
export interface OwnerOnlyStats {
  readonly uid: number;
  readonly mode: number;
  isFile(): boolean;
  isDirectory(): boolean;
}

/** What `prepareOwnerOnlyFolder` did, or why the folder cannot hold owner-only files. */
export type OwnerOnlyFolder =
  | {
      ok: true;
      /** The permission bits the folder had when it was narrowed to 0700; absent if it was 0700. */
      tightenedFrom?: number;
    }
  | { ok: false; problem: string };

/**
 * Why someone other than this user could have written the file or folder that `stats` describes
 * (it is not a regular file or folder, another user owns it, group or others can write it), or
 * `undefined`. Give it `lstat` of a path or `fstat` of the descriptor that was read, never `stat`:
 * a symlink must fail as "not a regular folder", not be judged by its target. Without
 * `process.getuid` (Windows) only the kind and the mode are checked.
 */
export function ownerOnlyProblem(
  stats: OwnerOnlyStats,
  kind: 'file' | 'folder',
): string | undefined {
  const owner = kindOrOwnerProblem(stats, kind);
  if (owner !== undefined) return owner;
  if ((stats.mode & 0o022) !== 0)
    return `the ${kind} is writable by group or others (mode ${(stats.mode & 0o777).toString(8)})`;
  return undefined;
}

function kindOrOwnerProblem(stats: OwnerOnlyStats, kind: 'file' | 'folder'): string | undefined {
  if (kind === 'file' ? !stats.isFile() : !stats.isDirectory())
    return `the ${kind} is not a regular ${kind}`;
  const uid = typeof process.getuid === 'function' ? process.getuid() : undefined;
  if (uid !== undefined && stats.uid !== uid)
    return `the ${kind} belongs to another user (uid ${stats.uid})`;
  return undefined;
}

/** `ownerOnlyProblem` of the folder at `dir` (not followed if it is a symlink). */
export async function ownerOnlyFolderProblem(dir: string): Promise<string | undefined> {
  try {
    return ownerOnlyProblem(await lstat(dir), 'folder');
  } catch (error) {
    return `the folder cannot be examined (${errorCode(error)})`;
  }
}

/**
 * Makes `dir` ready to hold files that only this user can have written: creates it (and missing
 * parents) mode 0700; refuses a symlink, a non-folder and another user's folder; and narrows a
 * folder of this user that others could read or write (0775 after a umask of 002, an older
 * release's 0755) to 0700, saying so in `tightenedFrom` so the caller can warn.
 *
 * The folder is opened with `O_NOFOLLOW | O_DIRECTORY`, checked with `fstat` and narrowed with
 * `fchmod` on that descriptor: a root process must not `chmod` whatever a symlink swapped in
 * after the check points at. Never throws.
 */
export async function prepareOwnerOnlyFolder(dir: string): Promise<OwnerOnlyFolder> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    return { ok: false, problem: `the folder cannot be created (${errorCode(error)})` };
  }
  let handle;
  try {
    handle = await open(
      dir,
      constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | (constants.O_NOFOLLOW ?? 0),
    );
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ELOOP' || code === 'ENOTDIR') {
      const link = await lstat(dir).then(
        (stats) => stats.isSymbolicLink(),
        () => false,
      );
      return {
        ok: false,
        problem: link ? 'the folder is a symlink' : 'the folder is not a regular folder',
      };
    }
    return { ok: false, problem: `the folder cannot be opened (${code})` };
  }
  try {
    const stats = await handle.stat();
    // The mode is what this function repairs; the kind and the owner it cannot.
    const problem = kindOrOwnerProblem(stats, 'folder');
    if (problem !== undefined) return { ok: false, problem };
    if ((stats.mode & 0o077) === 0) return { ok: true };
    await handle.chmod(0o700);
    return { ok: true, tightenedFrom: stats.mode & 0o777 };
  } catch (error) {
    return {
      ok: false,
      problem: `the folder cannot be narrowed to mode 700 (${errorCode(error)})`,
    };
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/**
 * How an OS or library error is named in a message or warning: its `code` (`ENOENT`, `EACCES`)
 * when it has one, which says what went wrong without the path the message already names, else
 * its message.
 */
export function errorCode(error: unknown): string {
  if (
    typeof error === 'object' &&
    error !== null &&
    'code' in error &&
    typeof error.code === 'string'
  ) {
    return error.code;
  }
  return error instanceof Error ? error.message : String(error);
}
