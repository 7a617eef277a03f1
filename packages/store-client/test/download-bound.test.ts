import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { buildStaticStore, installPack, isStoreError, openStore } from '../src/index.js';
import { listTree, startServer, tempDir, writePack } from './helpers.js';

// A static store's index states each archive's `size`, and that claim was the download's only
// bound. Gzip members that inflate to nothing give the tar reader no byte, so no ratio, tar or
// entry bound ever fires: a store claiming a terabyte could stream them into the archive cache
// until the disk was full. The claim is now held to `maxDownloadBytes` before anything is fetched.

/** An empty gzip member: 20 bytes that inflate to nothing. */
const EMPTY_MEMBER = gzipSync(Buffer.alloc(0));
/** What the flooding store sends before it gives up (a bound for the test, not for the client). */
const FLOOD_BYTES = 16 * 1024 * 1024;

async function floodingStore() {
  const root = await tempDir('store-client-flood-');
  const index = JSON.stringify({
    format: 'packwarden-store/1',
    artifacts: [
      {
        type: 'pack',
        slug: 'flood',
        latestVersion: '1.0.0',
        versions: [
          {
            version: '1.0.0',
            archive: 'flood-1.0.0.tar.gz',
            size: 2 ** 40,
            sha256: createHash('sha256').update('whatever').digest('hex'),
            digest: '0'.repeat(64),
          },
        ],
      },
    ],
  });
  const flood = { requests: 0, sent: 0 };
  const chunk = Buffer.concat(Array.from({ length: 3277 }, () => EMPTY_MEMBER)); // ~64 KiB
  const server = await startServer(async (req, res) => {
    if (req.url === '/index.json') return void res.end(index);
    flood.requests++;
    res.writeHead(200, { 'content-type': 'application/gzip' });
    while (flood.sent < FLOOD_BYTES && !res.destroyed) {
      flood.sent += chunk.length;
      if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
    }
    res.end();
  });
  return { root, url: `${server.url}/index.json`, flood, home: join(root, 'home') };
}

describe('the download bound of a static store archive', () => {
  it('an index claiming more than maxDownloadBytes is ERR_DOWNLOAD_TOO_LARGE before any byte is fetched', async () => {
    const { root, url, flood, home } = await floodingStore();
    const cacheDir = join(root, 'cache');
    const store = await openStore({ url, env: {}, cacheDir });
    const error = await installPack(store, { type: 'pack', slug: 'flood' }, { home, env: {} }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isStoreError(error), String(error)).toBe(true);
    expect((error as { code: string }).code, (error as Error).message).toBe(
      'ERR_DOWNLOAD_TOO_LARGE',
    );
    // The archive was never asked for; nothing in the home, nothing in the archive cache.
    expect(flood.requests).toBe(0);
    expect(await listTree(home).catch(() => [])).toEqual([]);
    const cached = await listTree(cacheDir).catch(() => []);
    expect(cached.filter((p) => p.startsWith('archives/') && !p.endsWith('/'))).toEqual([]);
  });

  it('maxDownloadBytes also bounds an honest store; within it the same archive installs', async () => {
    const root = await tempDir('store-client-bound-');
    await writePack(join(root, 'packs', 'demo'), 'demo', '1.0.0', { 'skills/a.md': 'a' });
    const built = await buildStaticStore(join(root, 'packs'), { out: join(root, 'store') });
    const size = (await readFile(join(root, 'store', built.packs[0]!.archive))).length;
    const store = await openStore({ url: join(root, 'store'), env: {}, cacheDir: false });
    const home = join(root, 'home');
    const error = await installPack(
      store,
      { type: 'pack', slug: 'demo' },
      { home, env: {}, maxDownloadBytes: size - 1 },
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as { code?: string }).code).toBe('ERR_DOWNLOAD_TOO_LARGE');
    expect(await listTree(home).catch(() => [])).toEqual([]);
    const result = await installPack(
      store,
      { type: 'pack', slug: 'demo' },
      { home, env: {}, maxDownloadBytes: size },
    );
    expect(result.version).toBe('1.0.0');
  });
});
