import type { Dirent } from 'node:fs';
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
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
// Folders are read synchronously (a readdir is a few microseconds; a trip through the thread
// pool costs more than that), yielding to the event loop every few folders.
const YIELD_EVERY_DIRECTORIES = 16;

function hasControlByte(name: Buffer): boolean {
  for (const byte of name) if (byte < 0x20 || byte === 0x7f) return true;
  return false;
}

function displayPath(relativeDir: string, name: string): string {
  return relativeDir === '' ? name : `${relativeDir}/${name}`;
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
  if (hasControlByte(raw)) {
    const shown = displayPath(relativeDir, name);
    throw new PackDigestError(
      'ERR_DIGEST_CONTROL_CHARACTER',
      `name contains a control character: ${JSON.stringify(shown)}`,
      {
        path: shown,
      },
    );
  }
  return name;
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
 */
export async function walkPack(
  root: string,
  limits: PackDigestLimits,
  signal?: AbortSignal,
): Promise<WalkedEntry[]> {
  const entries: WalkedEntry[] = [];
  const queue: Array<{ absolutePath: string; path: string; depth: number }> = [
    { absolutePath: root, path: '', depth: 0 },
  ];

  const visit = (dir: { absolutePath: string; path: string; depth: number }) => {
    let dirents: Dirent<Buffer>[];
    try {
      dirents = readdirSync(dir.absolutePath, { withFileTypes: true, encoding: 'buffer' });
    } catch (error) {
      throw ioError(error, dir.path);
    }
    const seen = new Map<string, string>();
    for (const dirent of dirents) {
      const name = decodeName(dirent.name, dir.path);
      const nfc = name.normalize('NFC');
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
      if (dir.depth === 0 && nfc === DIGEST_EXCLUDED_PATH) continue;
      if (Buffer.byteLength(path) > limits.maxPathBytes) {
        throw new PackDigestError(
          'ERR_DIGEST_PATH_TOO_LONG',
          `path longer than ${limits.maxPathBytes} bytes: ${path.slice(0, 120)}…`,
          {
            path,
          },
        );
      }
      const absolutePath = join(dir.absolutePath, name);
      let kind = kindOf(dirent);
      if (kind === undefined) {
        // Some file systems leave the type out of readdir (DT_UNKNOWN): ask lstat.
        try {
          kind = kindOf(lstatSync(absolutePath)) ?? 'unknown';
        } catch (error) {
          throw ioError(error, path);
        }
      }
      if (kind === 'directory') {
        if (dir.depth + 1 > limits.maxDepth) {
          throw new PackDigestError(
            'ERR_DIGEST_TOO_DEEP',
            `folders nest deeper than ${limits.maxDepth} levels at ${path}`,
            { path },
          );
        }
        queue.push({ absolutePath, path, depth: dir.depth + 1 });
      } else if (kind === 'file' || kind === 'symlink') {
        if (entries.length >= limits.maxEntries) {
          throw new PackDigestError(
            'ERR_DIGEST_TOO_MANY_ENTRIES',
            `the pack has more than ${limits.maxEntries} files`,
            { path },
          );
        }
        entries.push({ absolutePath, path, kind });
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
    }
  };

  let visited = 0;
  while (queue.length > 0) {
    if (signal?.aborted) throw signal.reason;
    visit(queue.pop()!);
    if (++visited % YIELD_EVERY_DIRECTORIES === 0)
      await new Promise((resolve) => setImmediate(resolve));
  }
  return entries;
}
