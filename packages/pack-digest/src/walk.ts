import type { Dirent } from 'node:fs';
import { lstatSync, readdirSync } from 'node:fs';
import { sep } from 'node:path';
import { DIGEST_EXCLUDED_PATH, type PackDigestLimits } from './constants.js';
import { PackDigestError, type UnsupportedFileType } from './errors.js';

export interface WalkedEntry {
  /** Where to read it: the on-disk name, which may be NFD (e.g. on macOS). */
  absolutePath: string;
  /** The manifest path: pack-relative, `/`-separated, NFC. */
  path: string;
  kind: 'file' | 'symlink';
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
// Folders are read synchronously (listing one is a few microseconds; a trip through the thread
// pool costs more than that), yielding to the event loop every few folders once the caller is
// ready for it, and every so many folders in any case.
const YIELD_EVERY_DIRECTORIES = 16;
const YIELD_AT_LEAST_EVERY_DIRECTORIES = 256;
// Printable ASCII: valid UTF-8, no control character, its own NFC form, one byte per character.
const PRINTABLE_ASCII = /^[\u0020-\u007e]*$/;
// What Node puts in a name read as a string for bytes that are not UTF-8.
const REPLACEMENT_CHARACTER = '\ufffd';

function displayPath(relativeDir: string, name: string): string {
  return relativeDir === '' ? name : `${relativeDir}/${name}`;
}

// Decoded names hold U+0000–U+001F and U+007F exactly where their bytes held 0x00–0x1F and 0x7F:
// every other character's UTF-8 bytes are 0x80 or more.
function refuseControlCharacter(name: string, relativeDir: string): void {
  let control = false;
  for (let i = 0; i < name.length && !control; i++) {
    const unit = name.charCodeAt(i);
    control = unit < 0x20 || unit === 0x7f;
  }
  if (!control) return;
  const shown = displayPath(relativeDir, name);
  throw new PackDigestError(
    'ERR_DIGEST_CONTROL_CHARACTER',
    `name contains a control character: ${JSON.stringify(shown)}`,
    {
      path: shown,
    },
  );
}

function decodeName(raw: Buffer, relativeDir: string): string {
  let name: string;
  try {
    name = utf8.decode(raw);
  } catch (cause) {
    const shown = displayPath(relativeDir, raw.toString('utf8'));
    throw new PackDigestError(
      'ERR_DIGEST_INVALID_UTF8_NAME',
      `name is not valid UTF-8: ${JSON.stringify(shown)}`,
      {
        path: shown,
        cause,
      },
    );
  }
  refuseControlCharacter(name, relativeDir);
  return name;
}

/** Hears of one folder entry; returns false to stop there. */
type OnDirent = (dirent: Dirent | Dirent<Buffer>) => boolean;

/**
 * A folder's entries, handed to `onDirent` one at a time. Names are read as strings (reading a
 * Buffer per name and decoding it cost ~8 ms of a 51 ms walk over 20,000 files, issue 14); where
 * one holds U+FFFD, which is what Node substitutes for bytes that are not UTF-8, the folder is read
 * again as bytes, so that such a name is refused (spec rule 3) and a real U+FFFD is kept.
 *
 * Read whole with `readdirSync`, not streamed through `opendir`: streaming bounds the memory of
 * one folder of millions of names (179 MiB for 1,000,000 names read whole, 6 MiB streamed) but
 * cost 15-20% of every digest of a small pack (417 against 484-538 digests a second of a
 * 200-file pack, issue 14). Packs that arrive through an install are bounded long before that
 * (store-client's extraction limits); a tree on disk that big is refused by `maxEntries` once it
 * is read.
 */
function listFolder(absolutePath: string, onDirent: OnDirent): void {
  let dirents: Array<Dirent | Dirent<Buffer>> = readdirSync(absolutePath, { withFileTypes: true });
  for (const dirent of dirents) {
    if ((dirent.name as string).includes(REPLACEMENT_CHARACTER)) {
      dirents = readdirSync(absolutePath, { withFileTypes: true, encoding: 'buffer' });
      break;
    }
  }
  for (const dirent of dirents) if (!onDirent(dirent)) return;
}

interface Folder {
  absolutePath: string;
  path: string;
  /** UTF-8 bytes of `path`. */
  pathBytes: number;
  depth: number;
}

type EntryKind = 'directory' | 'file' | 'symlink' | UnsupportedFileType;

/** Both `Dirent` and `Stats` answer these; a Dirent answers none of them for DT_UNKNOWN. */
interface TypeQueries {
  isDirectory(): boolean;
  isFile(): boolean;
  isSymbolicLink(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
}

function kindOf(entry: TypeQueries): EntryKind | undefined {
  if (entry.isDirectory()) return 'directory';
  if (entry.isFile()) return 'file';
  if (entry.isSymbolicLink()) return 'symlink';
  if (entry.isFIFO()) return 'fifo';
  if (entry.isSocket()) return 'socket';
  if (entry.isCharacterDevice()) return 'character-device';
  if (entry.isBlockDevice()) return 'block-device';
  return undefined;
}

function ioError(error: unknown, path: string): PackDigestError {
  const code = (error as { code?: string }).code;
  if (code === 'ENOENT' || code === 'ENOTDIR') {
    return new PackDigestError(
      'ERR_DIGEST_TREE_CHANGED',
      `${path || '.'} disappeared while the pack was read`,
      {
        path,
        cause: error,
      },
    );
  }
  return new PackDigestError(
    'ERR_DIGEST_IO',
    `cannot read ${path || '.'}: ${(error as Error).message}`,
    {
      path,
      cause: error,
    },
  );
}

/**
 * Lists every regular file and symlink under `root` (already resolved, a directory), never
 * following symlinks, refusing what spec rule 3 refuses, within `limits`. Order is unspecified.
 * `onFile` hears of each regular file as it is listed, in the order of the result, so that a
 * caller can start reading files before the walk is over. The walk yields to the event loop
 * every 16 folders while `mayYield` says so (by default, always), and every 256 in any case.
 */
export async function walkPack(
  root: string,
  limits: PackDigestLimits,
  signal?: AbortSignal,
  onFile?: (absolutePath: string) => void,
  mayYield: () => boolean = () => true,
): Promise<WalkedEntry[]> {
  const entries: WalkedEntry[] = [];
  const queue: Folder[] = [{ absolutePath: root, path: '', pathBytes: 0, depth: 0 }];

  let folders = 0;

  const visit = (dir: Folder) => {
    // Names are single path segments: joined by hand, since path.join normalises every result
    // (~12 ms of that 51 ms walk, issue 14).
    const prefix = dir.absolutePath.endsWith(sep) ? dir.absolutePath : dir.absolutePath + sep;
    const prefixBytes = dir.path === '' ? 0 : dir.pathBytes + 1;
    const seen = new Map<string, string>();
    const onDirent = (dirent: Dirent | Dirent<Buffer>): boolean => {
      let name: string;
      let nfc: string;
      let pathBytes: number;
      if (typeof dirent.name === 'string' && PRINTABLE_ASCII.test(dirent.name)) {
        name = nfc = dirent.name;
        pathBytes = prefixBytes + name.length;
      } else {
        if (typeof dirent.name === 'string') {
          name = dirent.name;
          refuseControlCharacter(name, dir.path);
        } else {
          name = decodeName(dirent.name, dir.path);
        }
        nfc = name.normalize('NFC');
        pathBytes = prefixBytes + Buffer.byteLength(nfc);
      }
      const path = displayPath(dir.path, nfc);
      const other = seen.get(nfc);
      if (other !== undefined) {
        throw new PackDigestError(
          'ERR_DIGEST_NFC_COLLISION',
          `${JSON.stringify(displayPath(dir.path, other))} and ${JSON.stringify(displayPath(dir.path, name))} are the same name after NFC normalisation`,
          { path },
        );
      }
      seen.set(nfc, name);
      if (pathBytes > limits.maxPathBytes) {
        throw new PackDigestError(
          'ERR_DIGEST_PATH_TOO_LONG',
          `path longer than ${limits.maxPathBytes} bytes: ${path.slice(0, 120)}…`,
          {
            path,
          },
        );
      }
      const absolutePath = prefix + name;
      let kind = kindOf(dirent);
      if (kind === undefined) {
        // Some file systems leave the type out of readdir (DT_UNKNOWN): ask lstat.
        try {
          kind = kindOf(lstatSync(absolutePath)) ?? 'unknown';
        } catch (error) {
          throw ioError(error, path);
        }
      }
      // Spec rule 2 leaves out one path, the root `pack.sig`, whatever it is. A folder of that
      // name is no entry, and what it holds is content like any other (vector
      // `root-pack-sig-folder`): skipping it too left files out of the digest.
      if (dir.depth === 0 && nfc === DIGEST_EXCLUDED_PATH && kind !== 'directory') return true;
      if (kind === 'directory') {
        if (dir.depth + 1 > limits.maxDepth) {
          throw new PackDigestError(
            'ERR_DIGEST_TOO_DEEP',
            `folders nest deeper than ${limits.maxDepth} levels at ${path}`,
            { path },
          );
        }
        if (folders >= limits.maxFolders) {
          throw new PackDigestError(
            'ERR_DIGEST_TOO_MANY_FOLDERS',
            `the pack has more than ${limits.maxFolders} folders`,
            { path },
          );
        }
        folders++;
        queue.push({ absolutePath, path, pathBytes, depth: dir.depth + 1 });
      } else if (kind === 'file' || kind === 'symlink') {
        if (entries.length >= limits.maxEntries) {
          throw new PackDigestError(
            'ERR_DIGEST_TOO_MANY_ENTRIES',
            `the pack has more than ${limits.maxEntries} files`,
            { path },
          );
        }
        entries.push({ absolutePath, path, kind });
        if (kind === 'file') onFile?.(absolutePath);
      } else {
        throw new PackDigestError(
          'ERR_DIGEST_UNSUPPORTED_TYPE',
          `${path} is a ${kind}; packs may hold only files, folders and symlinks`,
          {
            path,
            fileType: kind,
          },
        );
      }
      return true;
    };
    try {
      listFolder(dir.absolutePath, onDirent);
    } catch (error) {
      if (error instanceof PackDigestError) throw error;
      throw ioError(error, dir.path);
    }
  };

  let sinceYield = 0;
  while (queue.length > 0) {
    if (signal?.aborted) throw signal.reason;
    visit(queue.pop()!);
    sinceYield++;
    if (
      sinceYield >= YIELD_AT_LEAST_EVERY_DIRECTORIES ||
      (sinceYield >= YIELD_EVERY_DIRECTORIES && mayYield())
    ) {
      sinceYield = 0;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  return entries;
}
