import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
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
