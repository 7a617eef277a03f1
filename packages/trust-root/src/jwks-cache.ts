import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, lstat, mkdir, open, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { parseStrictJson } from '@packwarden/pack-manifest/resolve';
// A namespace import, not the `z` object: bundlers keep only what is used (see pack-manifest).
import * as z from 'zod';
import { TRUST_ROOT_LIMITS } from './limits.js';

/** The last good key set of one remote source, as kept on disk. */
export interface CacheEntry {
  readonly kind: 'jwks' | 'lease';
  readonly url: string;
  /** The document exactly as served; it is validated again (pins included) whenever it is used. */
  readonly body: string;
  readonly etag?: string;
  readonly fetchedAt: Date;
  readonly validatedAt: Date;
  readonly expiresAt: Date;
}

const CACHE_VERSION = 1;

const entrySchema = z.object({
  version: z.literal(CACHE_VERSION),
  kind: z.enum(['jwks', 'lease']),
  url: z.string().max(TRUST_ROOT_LIMITS.maxUrlLength),
  body: z.string().max(TRUST_ROOT_LIMITS.maxDocumentBytes),
  etag: z.string().max(TRUST_ROOT_LIMITS.maxEtagLength).optional(),
  fetchedAt: z.iso.datetime(),
  validatedAt: z.iso.datetime(),
  expiresAt: z.iso.datetime(),
});

export function cacheFilePath(dir: string, kind: CacheEntry['kind'], url: string): string {
  const name = createHash('sha256').update(`${kind}\n${url}`).digest('hex').slice(0, 32);
  return join(dir, `${kind}-${name}.json`);
}

/**
 * Reads the cached entry for a source, or `undefined`. A cache that someone else could have
 * written (another owner, group- or world-writable file or folder, a symlink) is ignored with a
 * warning: whoever can write it could choose the trusted keys.
 */
export async function readCacheEntry(
  dir: string,
  kind: CacheEntry['kind'],
  url: string,
  warnings: string[],
): Promise<CacheEntry | undefined> {
  const file = cacheFilePath(dir, kind, url);
  let handle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT')
      warnings.push(`trust root cache ${file} is ignored: ${errorCode(error)}.`);
    return undefined;
  }
  try {
    const problem = (await unsafeFolder(dir)) ?? unsafeStats(await handle.stat(), 'file');
    if (problem !== undefined) {
      warnings.push(`trust root cache ${file} is ignored: ${problem}.`);
      return undefined;
    }
    const stats = await handle.stat();
    if (stats.size > TRUST_ROOT_LIMITS.maxCacheFileBytes) {
      warnings.push(`trust root cache ${file} is ignored: it is too large.`);
      return undefined;
    }
    const text = await handle.readFile({ encoding: 'utf8' });
    const parsed = entrySchema.safeParse(safeJson(text));
    if (!parsed.success || parsed.data.kind !== kind || parsed.data.url !== url) {
      warnings.push(
        `trust root cache ${file} is ignored: it is not a valid cache entry for ${url}.`,
      );
      return undefined;
    }
    const { data } = parsed;
    return {
      kind: data.kind,
      url: data.url,
      body: data.body,
      ...(data.etag === undefined ? {} : { etag: data.etag }),
      fetchedAt: new Date(data.fetchedAt),
      validatedAt: new Date(data.validatedAt),
      expiresAt: new Date(data.expiresAt),
    };
  } catch (error) {
    warnings.push(`trust root cache ${file} is ignored: ${errorCode(error)}.`);
    return undefined;
  } finally {
    await handle.close();
  }
}

/**
 * Writes an entry atomically (temporary file in the same folder, then rename), mode 0600 in a
 * 0700 folder. A failure only costs the cache, so it becomes a warning.
 */
export async function writeCacheEntry(
  dir: string,
  entry: CacheEntry,
  warnings: string[],
): Promise<void> {
  const file = cacheFilePath(dir, entry.kind, entry.url);
  const temp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const folder = await lstat(dir);
    const ownerProblem = unsafeOwner(folder, 'folder');
    if (!folder.isDirectory() || ownerProblem !== undefined) {
      warnings.push(`trust root cache not written: ${dir} ${ownerProblem ?? 'is not a folder'}.`);
      return;
    }
    if ((folder.mode & 0o077) !== 0) await chmod(dir, 0o700);
    const document = JSON.stringify({
      version: CACHE_VERSION,
      kind: entry.kind,
      url: entry.url,
      body: entry.body,
      ...(entry.etag === undefined ? {} : { etag: entry.etag }),
      fetchedAt: entry.fetchedAt.toISOString(),
      validatedAt: entry.validatedAt.toISOString(),
      expiresAt: entry.expiresAt.toISOString(),
    });
    const handle = await open(
      temp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      await handle.writeFile(document, 'utf8');
      await handle.chmod(0o600);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    warnings.push(`trust root cache not written to ${dir}: ${errorCode(error)}.`);
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

function errorCode(error: unknown): string {
  if (
    typeof error === 'object' &&
    error !== null &&
    'code' in error &&
    typeof error.code === 'string'
  )
    return error.code;
  return error instanceof Error ? error.message : String(error);
}
