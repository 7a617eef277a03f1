import { writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isStoreError, openStore } from '../src/index.js';
import { startServer, tempDir } from './helpers.js';

// Issue 16.5: store indexes are parsed with the project's strict JSON parser. With JSON.parse a
// member named twice meant the last one, so one reader saw another archive hash than the next.

const ROW = (sha: string) =>
  `{"version":"1.0.0","archive":"a.tar.gz","size":10,"sha256":"${sha}","digest":"${'0'.repeat(64)}"}`;

const DUPLICATES: [string, string][] = [
  [
    'a version row naming sha256 twice',
    `{"format":"packwarden-store/1","artifacts":[{"type":"pack","slug":"demo","latestVersion":"1.0.0","versions":[${ROW('a'.repeat(64)).replace('"size"', `"sha256":"${'b'.repeat(64)}","size"`)}]}]}`,
  ],
  [
    'the format named twice',
    `{"format":"packwarden-store/1","format":"something-else","artifacts":[]}`,
  ],
  [
    'an escaped spelling of the same member',
    `{"format":"packwarden-store/1","artifacts":[],"\\u0061rtifacts":[]}`,
  ],
  [
    'an AgentHippo index naming latestVersion twice',
    `{"version":1,"artifacts":[{"type":"packs","slug":"demo","latestVersion":"1.0.0","latestVersion":"9.9.9"}]}`,
  ],
];

describe('store indexes are strict JSON (issue 16.5)', () => {
  for (const [name, text] of DUPLICATES) {
    it(`refuses ${name}: ERR_STORE_INDEX_INVALID, from a folder and over HTTP`, async () => {
      const dir = await tempDir();
      await mkdir(join(dir, 'store'));
      await writeFile(join(dir, 'store', 'index.json'), text);
      const server = await startServer((_req, res) => void res.end(text));
      for (const url of [join(dir, 'store'), `${server.url}/index.json`]) {
        const error = await openStore({ url, env: {}, cacheDir: false }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(isStoreError(error), String(error)).toBe(true);
        expect((error as { code: string }).code).toBe('ERR_STORE_INDEX_INVALID');
        expect((error as Error).message).toMatch(/twice|duplicate|repeat/i);
      }
    });
  }

  it('still reads a valid index with members in any order', async () => {
    const dir = await tempDir();
    await writeFile(
      join(dir, 'index.json'),
      `{"artifacts":[{"versions":[${ROW('a'.repeat(64))}],"latestVersion":"1.0.0","slug":"demo","type":"pack"}],"format":"packwarden-store/1"}`,
    );
    const store = await openStore({ url: dir, env: {}, cacheDir: false });
    expect(store.list().map((a) => a.slug)).toEqual(['demo']);
  });
});
