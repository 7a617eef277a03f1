import { createHash, randomBytes } from 'node:crypto';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import {
  errorCode,
  MAC_KEY_MIN_BYTES,
  readMacEntry,
  writeMacEntry,
  type MacEntryFormat,
} from '@packwarden/pack-manifest/fs';
// A namespace import, not the `z` object: bundlers keep only what is used (see pack-manifest).
import * as z from 'zod';
import { TRUST_ROOT_LIMITS } from './limits.js';

/** The last good key set of one remote source, as kept on disk. */
export interface CacheEntry {
  readonly kind: 'jwks' | 'lease';
  readonly url: string;
  /** The pins in force when the set was fetched, sorted: an entry serves only the same pins. */
  readonly pins: readonly string[];
  /** The document exactly as served; it is validated again (pins included) whenever it is used. */
  readonly body: string;
  readonly etag?: string;
  readonly fetchedAt: Date;
  readonly validatedAt: Date;
  readonly expiresAt: Date;
}

/**
 * Version 2 entries carry `mac`, an HMAC-SHA256 under the cache key over everything else; the
 * version 1 entries of earlier releases had none and are never read.
 */
const CACHE_VERSION = 2;

/** The bytes of a cache key: at least this long, so it cannot be guessed. */
export const CACHE_KEY_MIN_BYTES = MAC_KEY_MIN_BYTES;

let processKey: Buffer | undefined;

/**
 * Per cache file, the earliest `fetchedAt` an entry may still have: the newest key set this
 * process fetched, wrote or read from that file, or the moment the source answered with no usable
 * key set. The MAC proves who wrote an entry, not that it is the latest: whoever can write the
 * folder can put back a copy this process wrote earlier (saved before a key was revoked or
 * removed), and serving it as stale would bring that key back. Raised before any write, so a
 * failed write cannot leave an older set standing either. Only this process's memory: with a
 * shared `cacheKey`, a process that starts believes the newest entry it finds.
 */
const oldestBelievable = new Map<string, number>();

/**
 * Records that the entry of `source` fetched at `fetchedAt` was believed: no older one is, from
 * now on. Called once the caller has judged the entry's dates believable (a far-future entry must
 * not raise the floor past what this process will ever write).
 */
export function noteCacheEntryBelieved(
  dir: string,
  source: { kind: CacheEntry['kind']; url: string; pins: readonly string[] },
  fetchedAt: Date,
): void {
  raiseFloor(cacheFilePath(dir, source.kind, source.url, [...source.pins].sort()), fetchedAt);
}

/**
 * The `fetchedAt` to record for a key set `source` answered with at `now`: `now`, unless this
 * process has already believed, written or retired an entry of that file dated at or after it (an
 * entry from a process whose clock ran up to 5 minutes ahead, a retirement just past such an
 * entry, a clock stepped back), in which case one millisecond past that floor. A new set dated
 * below the floor would never be read back: no cache hit and no stale copy during an outage until
 * the clock caught up. Dated at the floor itself it would tie with the entry it replaces, and that
 * entry, put back, would be believed in its place. Strictly increasing per file, so the rollback
 * rule still holds: every copy written before is older than this one.
 */
export function fetchedAtForNewEntry(
  dir: string,
  source: { kind: CacheEntry['kind']; url: string; pins: readonly string[] },
  now: Date,
): Date {
  const floor = oldestBelievable.get(
    cacheFilePath(dir, source.kind, source.url, [...source.pins].sort()),
  );
  return floor === undefined || now.getTime() > floor ? now : new Date(floor + 1);
}

function raiseFloor(file: string, instant: Date): void {
  const ms = instant.getTime();
  if (ms > (oldestBelievable.get(file) ?? Number.NEGATIVE_INFINITY)) oldestBelievable.set(file, ms);
}

/**
 * The default cache key: random, made once per process and kept only in its memory. With it,
 * an entry is believed only when this process wrote it (trust-root README, "The cache"): code
 * that can write the cache folder (a sandboxed pack writing its state folder) cannot forge one,
 * and neither can an earlier process.
 */
export function processCacheKey(): Buffer {
  processKey ??= randomBytes(32);
  return processKey;
}

const entrySchema = z.strictObject({
  version: z.literal(CACHE_VERSION),
  kind: z.enum(['jwks', 'lease']),
  url: z.string().max(TRUST_ROOT_LIMITS.maxUrlLength),
  pins: z.array(z.string().max(64)).max(TRUST_ROOT_LIMITS.maxPins),
  body: z.string().max(TRUST_ROOT_LIMITS.maxDocumentBytes),
  etag: z.string().max(TRUST_ROOT_LIMITS.maxEtagLength).optional(),
  fetchedAt: z.iso.datetime(),
  validatedAt: z.iso.datetime(),
  expiresAt: z.iso.datetime(),
});

type Entry = z.output<typeof entrySchema>;

/** One file per source and pin set: changing the pins never reuses another set's entry. */
export function cacheFilePath(
  dir: string,
  kind: CacheEntry['kind'],
  url: string,
  pins: readonly string[],
): string {
  const name = createHash('sha256')
    .update(`${kind}\n${url}\n${[...pins].sort().join(',')}`)
    .digest('hex')
    .slice(0, 32);
  return join(dir, `${kind}-${name}.json`);
}

/** How entries are read and authenticated: the fields in a fixed order, as the MAC covers them. */
function entryFormat(key: Uint8Array): MacEntryFormat<Entry> {
  return {
    key,
    maxBytes: TRUST_ROOT_LIMITS.maxCacheFileBytes,
    maxDepth: TRUST_ROOT_LIMITS.maxDocumentDepth,
    parse: (document) => {
      const parsed = entrySchema.safeParse(document);
      return parsed.success ? parsed.data : undefined;
    },
    macInput: (entry) =>
      JSON.stringify([
        'packwarden-trust-root-cache',
        entry.version,
        entry.kind,
        entry.url,
        entry.pins,
        entry.body,
        entry.etag ?? null,
        entry.fetchedAt,
        entry.validatedAt,
        entry.expiresAt,
      ]),
  };
}

/**
 * Reads the cached entry for a source, or `undefined`. Whoever can write the cache could choose
 * the trusted keys, so an entry is believed only when its MAC verifies with `key` (by default a
 * key only this process holds) and it was fetched for the same kind, URL and pins. A file or
 * folder that someone else could have written (another owner, group- or world-writable, a
 * symlink) is ignored too. Every refusal is a warning, never an error: the network decides.
 */
export async function readCacheEntry(
  dir: string,
  source: { kind: CacheEntry['kind']; url: string; pins: readonly string[] },
  key: Uint8Array,
  warnings: string[],
): Promise<CacheEntry | undefined> {
  const { kind, url } = source;
  const pins = [...source.pins].sort();
  const file = cacheFilePath(dir, kind, url, pins);
  const ignored = (why: string): undefined => {
    warnings.push(`trust root cache ${file} is ignored: ${why}.`);
    return undefined;
  };
  // Not written by a holder of the cache key (planted, or from another process), or by someone
  // else than this user: ignored, with the reason.
  const read = await readMacEntry(file, entryFormat(key));
  if (read.kind === 'absent') return undefined;
  if (read.kind === 'refused') return ignored(read.reason);
  const data = read.entry;
  if (data.kind !== kind || data.url !== url || data.pins.join(',') !== pins.join(','))
    return ignored('it was fetched for another source or other pins');
  const floor = oldestBelievable.get(file);
  if (floor !== undefined && Date.parse(data.fetchedAt) < floor) {
    return ignored(
      'it is older than a key set this process has already had from the source (a rolled-back copy, or one the source has since replaced)',
    );
  }
  return {
    kind: data.kind,
    url: data.url,
    pins: data.pins,
    body: data.body,
    ...(data.etag === undefined ? {} : { etag: data.etag }),
    fetchedAt: new Date(data.fetchedAt),
    validatedAt: new Date(data.validatedAt),
    expiresAt: new Date(data.expiresAt),
  };
}

/**
 * Writes an entry atomically (`writeFileAtomic`: temporary file in the same folder, then rename),
 * mode 0600 in a 0700 folder. A failure only costs the cache, so it becomes a warning.
 */
export async function writeCacheEntry(
  dir: string,
  entry: CacheEntry,
  key: Uint8Array,
  warnings: string[],
): Promise<void> {
  const pins = [...entry.pins].sort();
  const file = cacheFilePath(dir, entry.kind, entry.url, pins);
  raiseFloor(file, entry.fetchedAt);
  const written = await writeMacEntry(
    file,
    {
      version: CACHE_VERSION,
      kind: entry.kind,
      url: entry.url,
      pins,
      body: entry.body,
      ...(entry.etag === undefined ? {} : { etag: entry.etag }),
      fetchedAt: entry.fetchedAt.toISOString(),
      validatedAt: entry.validatedAt.toISOString(),
      expiresAt: entry.expiresAt.toISOString(),
    },
    entryFormat(key),
  );
  if (!written.ok) {
    warnings.push(`trust root cache not written to ${dir}: ${written.problem}.`);
  } else if (written.tightenedFrom !== undefined) {
    warnings.push(
      `trust root cache folder ${dir} was mode ${written.tightenedFrom.toString(8)}; it is now 700, as entries in a folder others can write are not believed.`,
    );
  }
}

/**
 * The source answered, at `answeredAt`, with something that is no usable key set (a 4xx, a
 * redirect, a body refused, a set that fails its pins or holds no usable key): the copy from
 * before is no longer the last known good one. It is never served again, fresh or stale, by this
 * process (`oldestBelievable`), and the file is removed so that no process sharing the cache key
 * serves it either: a later outage must not trust keys the source has stopped vouching for.
 * Returns whether there was a file to retire.
 */
export async function retireCacheEntry(
  dir: string,
  source: { kind: CacheEntry['kind']; url: string; pins: readonly string[] },
  answeredAt: Date,
  warnings: string[],
): Promise<boolean> {
  const file = cacheFilePath(dir, source.kind, source.url, [...source.pins].sort());
  // Past every entry believed so far, even one dated a little ahead of this clock.
  const believed = oldestBelievable.get(file);
  raiseFloor(
    file,
    new Date(Math.max(answeredAt.getTime(), believed === undefined ? -Infinity : believed + 1)),
  );
  try {
    await unlink(file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    warnings.push(`trust root cache ${file} could not be removed: ${errorCode(error)}.`);
    return true;
  }
}
