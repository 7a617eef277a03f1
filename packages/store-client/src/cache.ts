import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '@packwarden/pack-manifest/fs';
import { STORE_INDEX_LIMITS } from './index-schema.js';
import { readSmallFile } from './small-file.js';

/** The index as a JSON string (escapes may double it), with its URL and ETag. */
const CACHED_INDEX_MAX_BYTES = 2 * STORE_INDEX_LIMITS.maxBytes + 64 * 1024;

// The cache is an optimisation: every failure to read or write it is ignored, never fatal.

interface CachedIndex {
  url: string;
  etag: string;
  body: string;
}

function indexFile(cacheDir: string, url: string): string {
  return join(cacheDir, 'index', `${createHash('sha256').update(url).digest('hex')}.json`);
}

export async function readCachedIndex(
  cacheDir: string | undefined,
  url: string,
): Promise<CachedIndex | undefined> {
  if (!cacheDir) return undefined;
  try {
    // The cache holds one index (at most STORE_INDEX_LIMITS.maxBytes) as a JSON string: what is
    // larger, a symlink or not a regular file was not written here, and is fetched afresh.
    const read = readSmallFile(indexFile(cacheDir, url), CACHED_INDEX_MAX_BYTES);
    if (!read.ok) return undefined;
    const parsed = JSON.parse(read.bytes.toString('utf8')) as Partial<CachedIndex>;
    if (parsed.url === url && typeof parsed.etag === 'string' && typeof parsed.body === 'string') {
      return parsed as CachedIndex;
    }
  } catch {
    // missing or unreadable: fetch afresh
  }
  return undefined;
}

export async function writeCachedIndex(
  cacheDir: string | undefined,
  entry: CachedIndex,
): Promise<void> {
  if (!cacheDir) return;
  try {
    await mkdir(join(cacheDir, 'index'), { recursive: true });
    await writeFileAtomic(indexFile(cacheDir, entry.url), JSON.stringify(entry), { mode: 0o644 });
  } catch {
    // a read-only home still installs
  }
}

/** Archives are content-addressed: the file name is the SHA-256 the index promised. */
export function archiveCachePath(cacheDir: string, sha256: string): string {
  return join(cacheDir, 'archives', `${sha256}.tar.gz`);
}
