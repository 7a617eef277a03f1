import { lstatSync, type Dirent } from 'node:fs';
import { join } from 'node:path';

/** What a folder entry is, as a `Dirent` answers it. */
export type TypedEntry = Pick<
  Dirent,
  | 'name'
  | 'isFile'
  | 'isDirectory'
  | 'isSymbolicLink'
  | 'isFIFO'
  | 'isSocket'
  | 'isBlockDevice'
  | 'isCharacterDevice'
>;

/**
 * The entry `dirent` of the folder `dir` with its type. Some file systems leave the type out of
 * readdir (`DT_UNKNOWN`: NFS, FUSE, XFS without `ftype`): such a `Dirent` answers no to every
 * `is…()`, so a check that walks folders would pass over a folder, a file or a socket there
 * without a word. Those entries are asked with `lstat` (a symlink stays a symlink), which throws
 * the OS error when the entry is gone. Every other `Dirent` is returned as it is.
 */
export function typedEntry(dir: string, dirent: Dirent): TypedEntry {
  if (
    dirent.isFile() ||
    dirent.isDirectory() ||
    dirent.isSymbolicLink() ||
    dirent.isFIFO() ||
    dirent.isSocket() ||
    dirent.isBlockDevice() ||
    dirent.isCharacterDevice()
  ) {
    return dirent;
  }
  const stats = lstatSync(join(dir, dirent.name));
  return {
    name: dirent.name,
    isFile: () => stats.isFile(),
    isDirectory: () => stats.isDirectory(),
    isSymbolicLink: () => stats.isSymbolicLink(),
    isFIFO: () => stats.isFIFO(),
    isSocket: () => stats.isSocket(),
    isBlockDevice: () => stats.isBlockDevice(),
    isCharacterDevice: () => stats.isCharacterDevice(),
  };
}
