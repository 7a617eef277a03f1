import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { lstat, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { readBoundedFile, writeFileAtomic } from '@packwarden/pack-manifest/fs';
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

let processKey: Buffer | undefined;

/**
 * The default key: random, made once per process, kept only in its memory. With it an entry is
 * believed only when this process wrote it, so whoever can write the cache folder as this user (a
 * sandboxed pack whose state holds it, a CI cache restored from another job) cannot plant one.
 */
export function processIndexCacheKey(): Buffer {
  processKey ??= randomBytes(32);
  return processKey;
}

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
  let problem: string | undefined;
  try {
    problem = unsafeStats(read.stats, 'file') ?? unsafeStats(await lstat(dirname(file)), 'folder');
  } catch (error) {
    return refused(`its folder cannot be examined (${errorCode(error)})`);
  }
  if (problem !== undefined) return refused(problem);
  if (read.kind !== 'read') return refused(`it is larger than ${CACHED_INDEX_MAX_BYTES} bytes`);
  let document: unknown;
  try {
    document = JSON.parse(read.bytes.toString('utf8'));
  } catch {
    return refused('it is not JSON');
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
 * Writes an entry atomically, mode 0600 in a folder made 0700. Into a folder that is not this
 * user's, or that group or others can write, nothing is written (it would never be read back).
 */
export async function writeCachedIndex(
  cache: IndexCache | undefined,
  entry: CachedIndex,
): Promise<void> {
  if (cache === undefined) return;
  if (entry.etag.length > MAX_ETAG_LENGTH || entry.url.length > MAX_URL_LENGTH) return;
  const file = indexCacheFile(cache.dir, entry.url);
  try {
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    if (unsafeStats(await lstat(dirname(file)), 'folder') !== undefined) return;
    const document = {
      version: CACHE_VERSION,
      ...entry,
      mac: macOf(cache.key, entry).toString('base64url'),
    };
    await writeFileAtomic(file, JSON.stringify(document), { mode: 0o600 });
  } catch {
    // a read-only home still installs
  }
}

/** Archives are content-addressed: the file name is the SHA-256 the index promised. */
export function archiveCachePath(cacheDir: string, sha256: string): string {
  return join(cacheDir, 'archives', `${sha256}.tar.gz`);
}

interface StatsLike {
  readonly uid: number;
  readonly mode: number;
  isFile(): boolean;
  isDirectory(): boolean;
}

/** Why someone other than this user could have written the file or folder, or `undefined`. */
function unsafeStats(stats: StatsLike, kind: 'file' | 'folder'): string | undefined {
  if (kind === 'file' ? !stats.isFile() : !stats.isDirectory())
    return `the ${kind} is not a regular ${kind}`;
  const uid = typeof process.getuid === 'function' ? process.getuid() : undefined;
  if (uid !== undefined && stats.uid !== uid)
    return `the ${kind} belongs to another user (uid ${stats.uid})`;
  if ((stats.mode & 0o022) !== 0)
    return `the ${kind} is writable by group or others (mode ${(stats.mode & 0o777).toString(8)})`;
  return undefined;
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : String((error as Error | undefined)?.message ?? error);
}
