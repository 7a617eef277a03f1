import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, readdir, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * Writes `path` so that readers see either the old file or the complete new one: a temporary
 * file in the same folder (created exclusively, never through a symlink), flushed to disk, then
 * renamed over `path`. A symlink at `path` is replaced, never written through.
 */
export async function writeFileAtomic(path: string, data: string, mode: number): Promise<void> {
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
}

/** Temporary files `writeFileAtomic` creates for `<dir>/<name>`: `.<name>.<pid>.<12 hex>.tmp`. */
function temporaryPattern(name: string): RegExp {
  return new RegExp(
    `^\\.${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.(\\d+)\\.[0-9a-f]{12}\\.tmp$`,
  );
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
