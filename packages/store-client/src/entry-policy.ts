import { checkArchivePath, foldName } from './archive-path.js';
import { StoreError } from './errors.js';
import type { ExtractLimits } from './limits.js';
import { PathRegistry } from './path-registry.js';
import type { TarEntry } from './tar-reader.js';

// What the extractor decides per entry, before anything is written (README "Extraction: what is
// refused"): which entry types are refused, where an entry lands once the archive's top folder
// and the artifact's folder are stripped, and whether it still fits the archive's budget.

/** Which part of an archive is extracted (`ExtractOptions`, the prefix already checked). */
export interface ArchiveSelection {
  stripTopFolder: boolean;
  stripPrefix: string | undefined;
}

/** What to do with one entry: nothing, or the folders to create and, for a file, where it goes. */
export type EntryVerdict =
  | { kind: 'skip' }
  | { kind: 'directory'; create: string[][] }
  | {
      kind: 'file';
      create: string[][];
      /** Its path under the extraction root, `.` components dropped. */
      segments: string[];
      /** Its path in the artifact as the archive spells it, for error messages. */
      relative: string;
    };

/**
 * The header judge of one extraction: every entry's header is judged here, in archive order,
 * before a byte of it is written; each refusal is a `StoreError` naming the entry. It also keeps
 * the counts the limits bound (entries scanned and extracted, content bytes).
 */
export class EntryJudge {
  /** Files admitted. */
  files = 0;
  /** Bytes of content admitted. */
  bytes = 0;
  private scanned = 0;
  private entries = 0;
  private matched = false;
  private readonly mapPath: (path: string) => string | undefined;
  private readonly registry = new PathRegistry();

  constructor(
    private readonly limits: ExtractLimits,
    private readonly selection: ArchiveSelection,
  ) {
    this.mapPath = archivePathMapper(selection);
  }

  judge(entry: TarEntry): EntryVerdict {
    const limits = this.limits;
    if (++this.scanned > limits.maxScannedEntries) {
      throw new StoreError(
        'ERR_ARCHIVE_TOO_MANY_ENTRIES',
        `more than ${limits.maxScannedEntries} entries in the archive`,
      );
    }
    const relative = this.mapPath(entry.path);
    if (relative === undefined) return { kind: 'skip' };
    this.matched = true;
    refuseEntryType(entry);
    const segments = checkArchivePath(relative === '' ? '.' : relative, limits);
    if (segments.length === 0) {
      if (entry.type === 'file') {
        throw new StoreError(
          'ERR_ARCHIVE_PATH_UNSAFE',
          `a file named like the root folder: ${JSON.stringify(entry.path)}`,
          { subject: entry.path },
        );
      }
      return { kind: 'skip' };
    }
    if (entry.type === 'file' && this.bytes + entry.size > limits.maxBytes) {
      throw new StoreError(
        'ERR_ARCHIVE_TOO_LARGE',
        `more than ${limits.maxBytes} bytes of content (at ${JSON.stringify(relative)})`,
        { subject: relative },
      );
    }
    const isDirectory = entry.type === 'directory';
    const create = this.registry.add(segments, isDirectory ? 'directory' : 'file', foldName);
    // What is created counts, not what the archive lists: a file 30 folders deep whose folders
    // the archive never names creates 31 entries, so 700 such headers would make 21,000 of them.
    this.entries += create.length + (isDirectory ? 0 : 1);
    if (this.entries > limits.maxEntries) {
      throw new StoreError(
        'ERR_ARCHIVE_TOO_MANY_ENTRIES',
        `more than ${limits.maxEntries} files and directories (folders a path implies included)`,
        { subject: relative },
      );
    }
    if (isDirectory) return { kind: 'directory', create };
    this.files++;
    this.bytes += entry.size;
    return { kind: 'file', create, segments, relative };
  }

  /** After the last entry: a prefix or top folder to strip must have matched something. */
  finish(): void {
    const { stripPrefix, stripTopFolder } = this.selection;
    if ((stripPrefix !== undefined || stripTopFolder) && !this.matched) {
      throw new StoreError(
        'ERR_ARCHIVE_PREFIX_NOT_FOUND',
        `nothing in the archive under ${JSON.stringify(stripPrefix ?? '(top folder)')}`,
      );
    }
  }
}

/**
 * Maps an archive path to its path inside the artifact: `''` for the artifact's root, `undefined`
 * for an entry outside it (read, counted, skipped). With `stripTopFolder` every entry must share
 * the first entry's top folder (GitHub tarballs have one), else `ERR_ARCHIVE_PATH_UNSAFE`.
 */
function archivePathMapper(prepared: ArchiveSelection): (path: string) => string | undefined {
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
function refuseEntryType(entry: TarEntry): void {
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
