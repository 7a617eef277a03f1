import { StoreError } from './errors.js';
import type { TarEntry } from './tar-reader.js';

// What the extractor decides per entry, before anything is written (README "Extraction: what is
// refused"): which entry types are refused, and where an entry lands once the archive's top
// folder and the artifact's folder are stripped.

/**
 * Maps an archive path to its path inside the artifact: `''` for the artifact's root, `undefined`
 * for an entry outside it (read, counted, skipped). With `stripTopFolder` every entry must share
 * the first entry's top folder (GitHub tarballs have one), else `ERR_ARCHIVE_PATH_UNSAFE`.
 */
export function archivePathMapper(prepared: {
  stripTopFolder: boolean;
  stripPrefix: string | undefined;
}): (path: string) => string | undefined {
  let topFolder: string | undefined;
  return (path: string): string | undefined => {
    let rest = path;
    if (prepared.stripTopFolder) {
      const slash = rest.indexOf('/');
      const top = slash < 0 ? rest : rest.slice(0, slash);
      if (topFolder === undefined) topFolder = top;
      else if (top !== topFolder) {
        throw new StoreError(
          'ERR_ARCHIVE_PATH_UNSAFE',
          `entry ${JSON.stringify(path.slice(0, 300))} is outside the archive's single top folder`,
          { subject: path },
        );
      }
      if (slash < 0) return '';
      rest = rest.slice(slash + 1);
    }
    const prefix = prepared.stripPrefix;
    if (prefix === undefined) return rest;
    if (rest === prefix || rest === `${prefix}/`) return '';
    if (rest.startsWith(`${prefix}/`)) return rest.slice(prefix.length + 1);
    return undefined;
  };
}

/** Only regular files (without a link target) and folders are extracted; every other type refuses the archive. */
export function refuseEntryType(entry: TarEntry): void {
  const where = JSON.stringify(entry.path.slice(0, 300));
  switch (entry.type) {
    case 'file':
      if (entry.linkname === undefined) return;
      throw new StoreError(
        'ERR_ARCHIVE_LINK',
        `a file carrying a link target is refused: ${where}`,
        { subject: entry.path },
      );
    case 'directory':
      return;
    case 'symlink':
    case 'hardlink':
      throw new StoreError(
        'ERR_ARCHIVE_LINK',
        `${entry.type === 'symlink' ? 'symbolic' : 'hard'} links are refused: ${where} -> ${JSON.stringify((entry.linkname ?? '').slice(0, 300))}`,
        { subject: entry.path },
      );
    case 'character-device':
    case 'block-device':
      throw new StoreError('ERR_ARCHIVE_ENTRY_TYPE', `device files are refused: ${where}`, {
        subject: entry.path,
      });
    case 'fifo':
      throw new StoreError('ERR_ARCHIVE_ENTRY_TYPE', `FIFOs are refused: ${where}`, {
        subject: entry.path,
      });
    case 'sparse':
      throw new StoreError('ERR_ARCHIVE_ENTRY_TYPE', `sparse files are refused: ${where}`, {
        subject: entry.path,
      });
    default:
      throw new StoreError(
        'ERR_ARCHIVE_ENTRY_TYPE',
        `entry type ${JSON.stringify(entry.typeflag)} is refused (only regular files and directories): ${where}`,
        { subject: entry.path },
      );
  }
}
