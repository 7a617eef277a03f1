import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '@packwarden/pack-manifest/fs';

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
    const parsed = JSON.parse(
      await readFile(indexFile(cacheDir, url), 'utf8'),
    ) as Partial<CachedIndex>;
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
