import { createHash } from 'node:crypto';
import { lstat, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  MAC_KEY_MIN_BYTES,
  readMacEntry,
  writeMacEntry,
  type MacEntryFormat,
} from '@packwarden/pack-manifest/fs';
import * as z from 'zod';
import { STORE_INDEX_LIMITS } from './index-schema.js';

/** The index as a JSON string (escapes may double it), with its URL, ETag and MAC. */
const CACHED_INDEX_MAX_BYTES = 2 * STORE_INDEX_LIMITS.maxBytes + 64 * 1024;
const MAX_URL_LENGTH = 8 * 1024;
const MAX_ETAG_LENGTH = 1024;

/** The bytes of an index cache key: at least this long, so it cannot be guessed. */
export const INDEX_CACHE_KEY_MIN_BYTES = MAC_KEY_MIN_BYTES;

/**
 * Version 2 entries carry `mac`, an HMAC-SHA256 under the cache key over the URL, the ETag and the
 * body; the unauthenticated entries of earlier releases are never read (they are refetched).
 */
const CACHE_VERSION = 2;

// The cache is an optimisation: every failure to read or write it means one full download, never
// a failed install. A refused entry is not used at all, not even to send `If-None-Match`.

/** Where the index cache lives and the key its entries are authenticated with. */
export interface IndexCache {
  dir: string;
  key: Uint8Array;
}

export interface CachedIndex {
  url: string;
  etag: string;
  body: string;
}

/** What a cache lookup found. `refused`: a file is there but cannot be believed; `reason` says why. */
export type CachedIndexRead =
  { kind: 'hit'; entry: CachedIndex } | { kind: 'miss' } | { kind: 'refused'; reason: string };

const entrySchema = z.strictObject({
  version: z.literal(CACHE_VERSION),
  url: z.string().max(MAX_URL_LENGTH),
  etag: z.string().max(MAX_ETAG_LENGTH),
  body: z.string().max(STORE_INDEX_LIMITS.maxBytes),
});

type Entry = z.output<typeof entrySchema>;

function entryFormat(key: Uint8Array): MacEntryFormat<Entry> {
  return {
    key,
    maxBytes: CACHED_INDEX_MAX_BYTES,
    parse: (document) => {
      const parsed = entrySchema.safeParse(document);
      return parsed.success ? parsed.data : undefined;
    },
    macInput: (entry) =>
      JSON.stringify([
        'packwarden-store-index-cache',
        entry.version,
        entry.url,
        entry.etag,
        entry.body,
      ]),
  };
}

export function indexCacheFile(cacheDir: string, url: string): string {
  return join(cacheDir, 'index', `${createHash('sha256').update(url).digest('hex')}.json`);
}

/**
 * The cached index of `url`. It is believed only as `readMacEntry` (`@packwarden/pack-manifest/fs`)
 * allows: a regular file, never through a symlink, within the size bound, it and its folder
 * this user's and writable by nobody else, strict JSON whose MAC verifies under `cache.key`; and
 * only when it was written for this very URL. The body is still only used after the server
 * answers `304` to its ETag.
 */
export async function readCachedIndex(
  cache: IndexCache | undefined,
  url: string,
): Promise<CachedIndexRead> {
  if (cache === undefined) return { kind: 'miss' };
  const file = indexCacheFile(cache.dir, url);
  const refused = (why: string): CachedIndexRead => ({
    kind: 'refused',
    reason: `the store index cache ${file} is ignored: ${why}`,
  });
  const read = await readMacEntry(file, entryFormat(cache.key));
  if (read.kind === 'absent') return { kind: 'miss' };
  if (read.kind === 'refused') return refused(read.reason);
  const { url: entryUrl, etag, body } = read.entry;
  if (entryUrl !== url) return refused(`it was written for another URL (${entryUrl})`);
  return { kind: 'hit', entry: { url: entryUrl, etag, body } };
}

/**
 * Writes an entry atomically, mode 0600, into a folder made (or narrowed to) 0700
 * (`writeMacEntry`). Into a folder that is a symlink or another user's, nothing is written (it
 * would never be read back). Returns what an operator should hear: the folder was narrowed, or
 * the entry could not be written.
 */
export async function writeCachedIndex(
  cache: IndexCache | undefined,
  entry: CachedIndex,
): Promise<string | undefined> {
  if (cache === undefined) return undefined;
  if (entry.etag.length > MAX_ETAG_LENGTH || entry.url.length > MAX_URL_LENGTH) return undefined;
  const file = indexCacheFile(cache.dir, entry.url);
  const written = await writeMacEntry(
    file,
    { version: CACHE_VERSION, url: entry.url, etag: entry.etag, body: entry.body },
    entryFormat(cache.key),
  );
  if (!written.ok) return `the store index was not cached in ${dirname(file)}: ${written.problem}`;
  return written.tightenedFrom === undefined
    ? undefined
    : `the store index cache folder ${dirname(file)} was mode ${written.tightenedFrom.toString(8)}; it is now 700, as entries in a folder others can write are not believed`;
}

/** Archives are content-addressed: the file name is the SHA-256 the index promised. */
export function archiveCachePath(cacheDir: string, sha256: string): string {
  return join(cacheDir, 'archives', `${sha256}.tar.gz`);
}

/**
 * The cached archive's path, once its `archives/` folder is made (if missing) and found to be a
 * real folder of this user; otherwise `undefined`: the archive is downloaded without the cache.
 * The cache folder may be written by others (README "The index cache"): an `archives/` that is a
 * symlink would have installs write, rename and delete `<sha256>.tar.gz` files in whatever folder
 * it names. Cached bytes are hashed before use, so a folder others can write into is fine; only
 * where the folder itself leads matters.
 */
export async function usableArchiveCachePath(
  cacheDir: string,
  sha256: string,
): Promise<string | undefined> {
  const file = archiveCachePath(cacheDir, sha256);
  const folder = dirname(file);
  try {
    await mkdir(folder, { recursive: true });
    const info = await lstat(folder);
    const uid = typeof process.getuid === 'function' ? process.getuid() : undefined;
    if (!info.isDirectory() || (uid !== undefined && info.uid !== uid)) return undefined;
  } catch {
    return undefined;
  }
  return file;
}
