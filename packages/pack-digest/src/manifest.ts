import { createHash } from 'node:crypto';
import { DIGEST_ALGORITHM, DIGEST_EXCLUDED_PATH } from './constants.js';
import { PackDigestError } from './errors.js';

/** `f` regular file, `x` regular file with the owner-execute bit, `l` symlink. */
export type PackEntryMode = 'f' | 'x' | 'l';

export interface PackManifestEntry {
  /** Pack-relative, `/`-separated, NFC-normalised. */
  path: string;
  mode: PackEntryMode;
  /** Lowercase hex SHA-256 of the content (of the link target string for a symlink). */
  sha256: string;
}

const LINE = /^([0-9a-f]{64}) ([fxl]) (.+)$/s;
// Bytes 0x00–0x1F and 0x7F: never part of a path in a v1 manifest.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;
// Printable ASCII: no control character, already NFC, valid Unicode, and ordered by UTF-16 code
// units exactly as by UTF-8 bytes. Most paths are; they skip the checks that cannot fail for them.
const PRINTABLE_ASCII = /^[\u0020-\u007e]*$/;

/** Orders paths by their UTF-8 bytes (what `LC_ALL=C sort` does), not by UTF-16 code units. */
export function compareManifestPaths(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

export function formatManifestLine(entry: PackManifestEntry): string {
  return `${entry.sha256} ${entry.mode} ${entry.path}`;
}

/** The whole manifest text: the version line, then one line per entry, each ending in `\n`. */
export function formatManifest(entries: readonly PackManifestEntry[]): string {
  let text = `${DIGEST_ALGORITHM}\n`;
  for (const entry of entries) text += `${formatManifestLine(entry)}\n`;
  return text;
}

/**
 * Why a pack-relative path cannot appear in a v1 manifest, or undefined when it can. Shared by
 * the parser (manifests from untrusted tokens) and anything that builds paths.
 */
export function manifestPathProblem(path: string): string | undefined {
  if (path.length === 0) return 'empty path';
  const ascii = PRINTABLE_ASCII.test(path);
  if (!ascii && CONTROL.test(path)) return 'control character in path';
  if (!ascii && path.normalize('NFC') !== path) return 'path is not NFC-normalised';
  if (path.startsWith('/')) return 'absolute path';
  if (path === DIGEST_EXCLUDED_PATH) return 'the root pack.sig is never part of the digest';
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.' || segment === '..')
      return `bad path segment "${segment}"`;
  }
  if (!ascii && Buffer.from(path, 'utf8').toString('utf8') !== path)
    return 'path is not valid Unicode';
  return undefined;
}

/** Parses one manifest line (without its `\n`), refusing anything not canonical. */
export function parseManifestLine(line: string): PackManifestEntry {
  const match = LINE.exec(line);
  if (!match) {
    throw new PackDigestError(
      'ERR_DIGEST_MANIFEST_LINE',
      `not a manifest line: ${JSON.stringify(line.slice(0, 200))}`,
    );
  }
  const [, sha256, mode, path] = match as unknown as [string, string, PackEntryMode, string];
  const problem = manifestPathProblem(path);
  if (problem) {
    throw new PackDigestError(
      'ERR_DIGEST_MANIFEST_LINE',
      `manifest line for ${JSON.stringify(path)}: ${problem}`,
      {
        path,
      },
    );
  }
  return { sha256, mode, path };
}

/**
 * Parses manifest lines (as carried in a `pack.sig` `files` claim) and checks they are in
 * strictly increasing byte order, so that one list of files has exactly one digest.
 */
export function parseManifestLines(lines: readonly string[]): PackManifestEntry[] {
  const entries: PackManifestEntry[] = [];
  let previous: string | undefined;
  for (const line of lines) {
    const entry = parseManifestLine(line);
    if (previous !== undefined && !isBefore(previous, entry.path)) {
      throw new PackDigestError(
        'ERR_DIGEST_MANIFEST_ORDER',
        `manifest lines are not sorted by path bytes (or repeat a path) at ${JSON.stringify(entry.path)}`,
        { path: entry.path },
      );
    }
    previous = entry.path;
    entries.push(entry);
  }
  return entries;
}

/** `a` sorts strictly before `b` by UTF-8 bytes. */
function isBefore(a: string, b: string): boolean {
  if (PRINTABLE_ASCII.test(a) && PRINTABLE_ASCII.test(b)) return a < b;
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')) < 0;
}

/** The digest of a manifest: lowercase hex SHA-256 of its text. */
export function digestManifest(entries: readonly PackManifestEntry[]): string {
  // Lines are hashed in chunks of about 64 KiB: a call per line cost more than the hashing
  // itself on a small pack, and one string of the whole manifest would double its memory.
  const hash = createHash('sha256');
  let chunk = `${DIGEST_ALGORITHM}\n`;
  for (const entry of entries) {
    chunk += `${entry.sha256} ${entry.mode} ${entry.path}\n`;
    if (chunk.length >= 65_536) {
      hash.update(chunk);
      chunk = '';
    }
  }
  return hash.update(chunk).digest('hex');
}

/** Parses, checks the order of, and digests manifest lines in one step. */
export function digestManifestLines(lines: readonly string[]): string {
  return digestManifest(parseManifestLines(lines));
}
