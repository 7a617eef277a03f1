import { chmod, copyFile, lstat, mkdir, readdir, readlink, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { CliError, EXIT } from '../errors.js';

const MAX_ENTRIES = 20_000;

/**
 * Copies a pack tree: regular files (keeping their execute bits, which the digest covers),
 * folders, and symlinks as links (never followed). Anything else is refused.
 */
export async function copyPackTree(source: string, target: string): Promise<number> {
  let count = 0;
  const visit = async (from: string, to: string): Promise<void> => {
    await mkdir(to, { recursive: true });
    for (const entry of await readdir(from, { withFileTypes: true })) {
      count += 1;
      if (count > MAX_ENTRIES)
        throw new CliError(`the pack has more than ${MAX_ENTRIES} entries`, EXIT.failure);
      const src = join(from, entry.name);
      const dst = join(to, entry.name);
      if (entry.isDirectory()) await visit(src, dst);
      else if (entry.isSymbolicLink()) await symlink(await readlink(src), dst);
      else if (entry.isFile()) {
        await copyFile(src, dst);
        await chmod(dst, (await lstat(src)).mode & 0o777);
      } else {
        throw new CliError(`cannot copy ${src}: not a file, folder or symlink`, EXIT.failure);
      }
    }
  };
  await visit(source, target);
  return count;
}

/** Replaces `target` with a fresh copy of `source`. */
export async function replaceWithCopy(source: string, target: string): Promise<void> {
  await rm(target, { recursive: true, force: true });
  await copyPackTree(source, target);
}
