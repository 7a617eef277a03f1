import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, lstat, mkdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { readBoundedFile, writeFileAtomic } from '@packwarden/pack-manifest/fs';
import { parseStrictJson } from '@packwarden/pack-manifest/resolve';
// A namespace import, not the `z` object: bundlers keep only what is used (see pack-manifest).
import * as z from 'zod';
import { errorCode } from './error-code.js';
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
export const CACHE_KEY_MIN_BYTES = 32;

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
  mac: z.string().regex(/^[A-Za-z0-9_-]{43}$/),
});

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

/** The entry's fields in a fixed order, as the MAC covers them. */
function macInput(entry: Omit<z.output<typeof entrySchema>, 'mac'>): string {
  return JSON.stringify([
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
  ]);
}

function macOf(key: Uint8Array, input: string): Buffer {
  return createHmac('sha256', key).update(input, 'utf8').digest();
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
  const read = readBoundedFile(file, TRUST_ROOT_LIMITS.maxCacheFileBytes);
  if (read.kind === 'absent') return undefined;
  if (read.kind === 'symlink' || read.kind === 'failed') return ignored(errorCode(read.cause));
  let problem: string | undefined;
  try {
    problem = (await unsafeFolder(dir)) ?? unsafeStats(read.stats, 'file');
  } catch (error) {
    return ignored(errorCode(error));
  }
  if (problem !== undefined) return ignored(problem);
  if (read.kind === 'too-large') return ignored('it is too large');
  if (read.kind !== 'read') return ignored('it grew while it was being read');
  const parsed = entrySchema.safeParse(safeJson(read.bytes.toString('utf8')));
  if (!parsed.success) return ignored('it is not a valid cache entry');
  const { data } = parsed;
  const { mac, ...covered } = data;
  const expected = macOf(key, macInput(covered));
  const given = Buffer.from(mac, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    // Not written by a holder of the cache key: planted, or from another process.
    return ignored('this process did not write it (its MAC does not verify with the cache key)');
  }
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
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const folder = await lstat(dir);
    const ownerProblem = unsafeOwner(folder, 'folder');
    if (!folder.isDirectory() || ownerProblem !== undefined) {
      warnings.push(`trust root cache not written: ${dir} ${ownerProblem ?? 'is not a folder'}.`);
      return;
    }
    if ((folder.mode & 0o077) !== 0) await chmod(dir, 0o700);
    const covered = {
      version: CACHE_VERSION,
      kind: entry.kind,
      url: entry.url,
      pins,
      body: entry.body,
      ...(entry.etag === undefined ? {} : { etag: entry.etag }),
      fetchedAt: entry.fetchedAt.toISOString(),
      validatedAt: entry.validatedAt.toISOString(),
      expiresAt: entry.expiresAt.toISOString(),
    } as const;
    const document = JSON.stringify({
      ...covered,
      mac: macOf(key, macInput(covered)).toString('base64url'),
    });
    await writeFileAtomic(file, document, { mode: 0o600 });
  } catch (error) {
    warnings.push(`trust root cache not written to ${dir}: ${errorCode(error)}.`);
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

interface StatsLike {
  readonly uid: number;
  readonly mode: number;
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}

async function unsafeFolder(dir: string): Promise<string | undefined> {
  return unsafeStats(await lstat(dir), 'folder');
}

function unsafeStats(stats: StatsLike, kind: 'file' | 'folder'): string | undefined {
  if (kind === 'file' ? !stats.isFile() : !stats.isDirectory())
    return `the ${kind} is not a regular ${kind}`;
  const owner = unsafeOwner(stats, kind);
  if (owner !== undefined) return owner;
  if ((stats.mode & 0o022) !== 0)
    return `the ${kind} is writable by group or others (mode ${(stats.mode & 0o777).toString(8)})`;
  return undefined;
}

function unsafeOwner(stats: StatsLike, kind: 'file' | 'folder'): string | undefined {
  const uid = typeof process.getuid === 'function' ? process.getuid() : undefined;
  if (uid !== undefined && stats.uid !== uid)
    return `the ${kind} belongs to another user (uid ${stats.uid})`;
  return undefined;
}

function safeJson(text: string): unknown {
  try {
    return parseStrictJson(text, {
      maxBytes: TRUST_ROOT_LIMITS.maxCacheFileBytes,
      maxDepth: TRUST_ROOT_LIMITS.maxDocumentDepth,
      what: 'the cache entry',
    });
  } catch {
    return undefined;
  }
}
