import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { dirname, join } from 'node:path';
import { parseStrictJson } from '@packwarden/pack-manifest';
import {
  errorCode,
  ownerOnlyFolderProblem,
  ownerOnlyProblem,
  prepareOwnerOnlyFolder,
  readBoundedFile,
  writeFileAtomic,
} from '@packwarden/pack-manifest/fs';
import * as z from 'zod';
import { STORE_INDEX_LIMITS } from './index-schema.js';

/** The index as a JSON string (escapes may double it), with its URL, ETag and MAC. */
const CACHED_INDEX_MAX_BYTES = 2 * STORE_INDEX_LIMITS.maxBytes + 64 * 1024;
const MAX_URL_LENGTH = 8 * 1024;
const MAX_ETAG_LENGTH = 1024;

/** The bytes of an index cache key: at least this long, so it cannot be guessed. */
export const INDEX_CACHE_KEY_MIN_BYTES = 32;

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
  mac: z.string().regex(/^[A-Za-z0-9_-]{43}$/),
});

export function indexCacheFile(cacheDir: string, url: string): string {
  return join(cacheDir, 'index', `${createHash('sha256').update(url).digest('hex')}.json`);
}

function macOf(key: Uint8Array, entry: CachedIndex): Buffer {
  const input = JSON.stringify([
    'packwarden-store-index-cache',
    CACHE_VERSION,
    entry.url,
    entry.etag,
    entry.body,
  ]);
  return createHmac('sha256', key).update(input, 'utf8').digest();
}

/**
 * The cached index of `url`. The file is opened without following a symlink and never waited on
 * (a FIFO), and is believed only if it and its folder belong to this user, neither is writable by
 * group or others, it is within the size bound, its MAC verifies under `cache.key` and it was
 * written for this very URL. The body is still only used after the server answers `304` to its
 * ETag.
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
  const read = readBoundedFile(file, CACHED_INDEX_MAX_BYTES);
  if (read.kind === 'absent') return { kind: 'miss' };
  if (read.kind === 'symlink') return refused('it is a symlink');
  if (read.kind === 'failed') return refused(`it cannot be read (${errorCode(read.cause)})`);
  const problem =
    ownerOnlyProblem(read.stats, 'file') ?? (await ownerOnlyFolderProblem(dirname(file)));
  if (problem !== undefined) return refused(problem);
  if (read.kind !== 'read') return refused(`it is larger than ${CACHED_INDEX_MAX_BYTES} bytes`);
  let document: unknown;
  try {
    // The project's strict parser, as for the index itself: a member named twice is refused.
    document = parseStrictJson(read.bytes.toString('utf8'), {
      maxBytes: CACHED_INDEX_MAX_BYTES,
      what: 'it',
    });
  } catch (error) {
    return refused((error as Error).message);
  }
  const parsed = entrySchema.safeParse(document);
  if (!parsed.success) return refused('it is not a cache entry of this version');
  const { mac, url: entryUrl, etag, body } = parsed.data;
  const entry = { url: entryUrl, etag, body };
  const expected = macOf(cache.key, entry);
  const given = Buffer.from(mac, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return refused('its MAC does not verify with the cache key (this process did not write it)');
  if (entryUrl !== url) return refused(`it was written for another URL (${entryUrl})`);
  return { kind: 'hit', entry };
}

/**
 * Writes an entry atomically, mode 0600, into a folder made (or narrowed to) 0700. Into a folder
 * that is a symlink or another user's, nothing is written (it would never be read back). Returns
 * what an operator should hear: the folder was narrowed, or the entry could not be written.
 */
export async function writeCachedIndex(
  cache: IndexCache | undefined,
  entry: CachedIndex,
): Promise<string | undefined> {
  if (cache === undefined) return undefined;
  if (entry.etag.length > MAX_ETAG_LENGTH || entry.url.length > MAX_URL_LENGTH) return undefined;
  const file = indexCacheFile(cache.dir, entry.url);
  const folder = await prepareOwnerOnlyFolder(dirname(file));
  if (!folder.ok) return `the store index was not cached in ${dirname(file)}: ${folder.problem}`;
  const document = {
    version: CACHE_VERSION,
    ...entry,
    mac: macOf(cache.key, entry).toString('base64url'),
  };
  try {
    await writeFileAtomic(file, JSON.stringify(document), { mode: 0o600 });
  } catch (error) {
    // A read-only home still installs.
    return `the store index was not cached in ${dirname(file)}: ${errorCode(error)}`;
  }
  return folder.tightenedFrom === undefined
    ? undefined
    : `the store index cache folder ${dirname(file)} was mode ${folder.tightenedFrom.toString(8)}; it is now 700, as entries in a folder others can write are not believed`;
}

/** Archives are content-addressed: the file name is the SHA-256 the index promised. */
export function archiveCachePath(cacheDir: string, sha256: string): string {
  return join(cacheDir, 'archives', `${sha256}.tar.gz`);
}
