import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, readdir, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

export interface WriteFileAtomicOptions {
  /** The file's permission bits, exactly: the umask does not narrow them. */
  mode: number;
  /**
   * Also fsync the folder after the rename, so that the new name, not only the new bytes,
   * survives a crash. For files whose loss a crash must not cause: a lockfile, `current.txt`.
   * Default `false`.
   */
  syncFolder?: boolean;
}

/**
 * packwarden's one atomic write: readers see either the old file or the complete new one. The
 * bytes go to a temporary file in the same folder (created exclusively and never through a
 * symlink: `O_CREAT | O_EXCL | O_NOFOLLOW`), which is set to exactly `mode`, fsynced and renamed
 * over `path`. A symlink at `path` is replaced, never written through. On every failure the
 * temporary file is removed and the error thrown as the OS gave it; each caller wraps it in its
 * own package's error.
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: WriteFileAtomicOptions,
): Promise<void> {
  const { mode } = options;
  const temporary = join(
    dirname(path),
    `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`,
  );
  const handle = await open(
    temporary,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0),
    mode,
  );
  let renamed = false;
  try {
    try {
      await handle.writeFile(data);
      // The umask may have narrowed `mode`; the file must end up exactly `mode`.
      await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, path);
    renamed = true;
  } finally {
    if (!renamed) await unlink(temporary).catch(() => undefined);
  }
  if (options.syncFolder === true) await syncFolder(dirname(path));
}

async function syncFolder(dir: string): Promise<void> {
  const folder = await open(dir, constants.O_RDONLY);
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
}

/** Temporary files `writeFileAtomic` creates for `<dir>/<name>`: `.<name>.<pid>.<12 hex>.tmp`. */
function temporaryPattern(name: string): RegExp {
  return new RegExp(
    `^\\.${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.(\\d+)\\.[0-9a-f]{12}\\.tmp$`,
  );
}

/** True when `entry` (a name in a folder) is a temporary file `writeFileAtomic` makes for `name`. */
export function isAtomicWriteTemporary(entry: string, name: string): boolean {
  return temporaryPattern(name).test(entry);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}

/**
 * Removes the temporary files a killed writer of `<dir>/<name>` left behind (their writer's pid is
 * gone): in a pack root they would otherwise be digested as content. Returns the temporary files
 * whose writer is still running, which the caller must not race.
 */
export async function removeStaleTemporaries(dir: string, name: string): Promise<string[]> {
  const pattern = temporaryPattern(name);
  const busy: string[] = [];
  for (const entry of await readdir(dir)) {
    const match = pattern.exec(entry);
    if (!match) continue;
    const path = join(dir, entry);
    if (isRunning(Number(match[1]))) busy.push(path);
    else if ((await lstat(path)).isFile()) await unlink(path).catch(() => undefined);
  }
  return busy;
}
