import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { buildStaticStore, installPack, isStoreError, openStore } from '../src/index.js';
import { listTree, startServer, tempDir, writePack } from './helpers.js';

// Issue 9.4: a store that lies about the archive (more bytes than the index's `size`, sent
// without Content-Length; or a Content-Encoding the client did not ask for) used to kill the
// installer with an unhandled stream `error` event, leaving `.lock` and `.staging-*` behind.

type Lie = 'longer-chunked' | 'gzip-encoded' | 'gzip-encoded-raw' | 'gzip-encoded-garbage';

async function lyingStore(lie: Lie) {
  const root = await tempDir('store-client-lying-');
  await writePack(join(root, 'packs', 'demo'), 'demo', '1.0.0', { 'skills/a.md': 'a' });
  const out = join(root, 'store');
  const built = await buildStaticStore(join(root, 'packs'), { out });
  const archivePath = join(out, built.packs[0]!.archive);
  const archive = await readFile(archivePath);
  const index = await readFile(join(out, 'index.json'));
  const encodings: (string | undefined)[] = [];
  const server = await startServer((req, res) => {
    if (req.url === '/index.json') return void res.end(index);
    encodings.push(req.headers['accept-encoding']);
    switch (lie) {
      case 'longer-chunked':
        // No Content-Length: the body is chunked and longer than the index's size.
        res.write(archive);
        res.write(Buffer.alloc(256 * 1024, 7));
        res.end();
        return;
      case 'gzip-encoded':
        res.setHeader('content-encoding', 'gzip');
        return void res.end(gzipSync(archive));
      case 'gzip-encoded-raw':
        res.setHeader('content-encoding', 'gzip');
        return void res.end(archive);
      case 'gzip-encoded-garbage':
        res.setHeader('content-encoding', 'gzip');
        return void res.end(Buffer.from('not gzip at all '.repeat(64)));
    }
  });
  return { root, url: `${server.url}/index.json`, encodings, home: join(root, 'home') };
}

const LIES: [Lie, string][] = [
  ['longer-chunked', 'ERR_DOWNLOAD_SIZE_MISMATCH'],
  ['gzip-encoded', 'ERR_DOWNLOAD_CONTENT_ENCODING'],
  ['gzip-encoded-raw', 'ERR_DOWNLOAD_CONTENT_ENCODING'],
  ['gzip-encoded-garbage', 'ERR_DOWNLOAD_CONTENT_ENCODING'],
];

describe('installPack from a lying store (issue 9.4)', () => {
  for (const [lie, code] of LIES) {
    for (const cache of [true, false]) {
      it(`${lie}, ${cache ? 'with' : 'without'} the archive cache: ${code}, nothing left`, async () => {
        const { root, url, home, encodings } = await lyingStore(lie);
        const cacheDir = join(root, 'cache');
        const store = await openStore({ url, env: {}, cacheDir: cache ? cacheDir : false });
        // Several times in one process: a crash or a leaked listener would show on a later round.
        for (let round = 0; round < 3; round++) {
          const error = await installPack(store, { type: 'pack', slug: 'demo' }, { home }).then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(isStoreError(error), String(error)).toBe(true);
          expect((error as { code: string }).code).toBe(code);
        }
        // Nothing installed, no lock, no staging folder, no cache file or cache temp file.
        expect(await listTree(join(home, 'agents', 'demo'))).toEqual([]);
        if (cache) {
          const cached = await listTree(cacheDir).catch(() => []);
          expect(cached.filter((p) => !p.endsWith('/') && !p.startsWith('index'))).toEqual([]);
        }
        // The client asks for the bytes as stored.
        expect(encodings.every((e) => e === 'identity')).toBe(true);
      });
    }
  }
});
