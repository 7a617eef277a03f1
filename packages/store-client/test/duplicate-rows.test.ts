import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildStaticStore, installPack, isStoreError, openStore } from '../src/index.js';
import { listTree, startServer, tempDir, writePack } from './helpers.js';

// The index is strict JSON so that no two readers see different archive hashes for one member
// (strict-index.test.ts). One level up, the same ambiguity: an artifact listed in two rows, or a
// version listed twice in one row. The installer took the first row (`rows.find`) while `list()`
// showed both, and any reader keeping the last row (a map from `type/slug`) saw the other
// archive, digest and signature. An ambiguous artifact or version is now reported and unusable.

/** A static store serving two honest builds of demo@1.0.0 with different content, A and B. */
async function twoBuilds() {
  const root = await tempDir('store-client-dup-');
  const rows = [];
  const archives = new Map<string, Buffer>();
  for (const which of ['a', 'b']) {
    await writePack(join(root, which, 'demo'), 'demo', '1.0.0', { 'hooks/run.sh': `${which}\n` });
    const out = join(root, `store-${which}`);
    const built = await buildStaticStore(join(root, which), { out });
    const name = `demo-${which}.tar.gz`;
    archives.set(`/${name}`, await readFile(join(out, built.packs[0]!.archive)));
    const index = JSON.parse(await readFile(join(out, 'index.json'), 'utf8'));
    const row = index.artifacts[0];
    row.versions[0].archive = name;
    rows.push(row);
  }
  const fetched: string[] = [];
  const serve = (document: unknown) =>
    startServer((req, res) => {
      if (req.url === '/index.json') return void res.end(JSON.stringify(document));
      fetched.push(req.url ?? '');
      const body = archives.get(req.url ?? '');
      if (!body) return void res.writeHead(404).end();
      res.end(body);
    });
  return { root, rows, fetched, serve };
}

async function refusal(promise: Promise<unknown>): Promise<{ code?: string; message: string }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isStoreError(error), String(error)).toBe(true);
  return error as { code: string; message: string };
}

describe('an artifact or version an index lists more than once', () => {
  it('two static rows for pack/demo: both reported, neither installed (ERR_ARTIFACT_NOT_FOUND)', async () => {
    const { root, rows, fetched, serve } = await twoBuilds();
    const server = await serve({ format: 'packwarden-store/1', artifacts: rows });
    const store = await openStore({ url: `${server.url}/index.json`, env: {}, cacheDir: false });
    expect(store.problems.map((p) => p.row)).toEqual([0, 1]);
    expect(store.problems[0]!.message).toMatch(/pack\/demo is listed 2 times/);
    expect(store.list()).toEqual([]);
    const home = join(root, 'home');
    const error = await refusal(installPack(store, { type: 'pack', slug: 'demo' }, { home }));
    expect(error.code).toBe('ERR_ARTIFACT_NOT_FOUND');
    expect(fetched).toEqual([]);
    expect(await listTree(home).catch(() => [])).toEqual([]);
  });

  it('one version listed twice in a row: reported, not installable (ERR_VERSION_NOT_FOUND)', async () => {
    const { root, rows, fetched, serve } = await twoBuilds();
    const older = { ...rows[0].versions[0], version: '0.9.0' };
    const row = { ...rows[0], versions: [...rows[0].versions, ...rows[1].versions, older] };
    const server = await serve({ format: 'packwarden-store/1', artifacts: [row] });
    const store = await openStore({ url: `${server.url}/index.json`, env: {}, cacheDir: false });
    expect(store.problems.map((p) => p.message)).toEqual([
      expect.stringMatching(/^versions\.0: pack\/demo@1\.0\.0 is listed 2 times/),
      expect.stringMatching(/^versions\.1: pack\/demo@1\.0\.0 is listed 2 times/),
      'demo: latestVersion 1.0.0 is not listed; using 0.9.0',
    ]);
    expect(store.info({ type: 'pack', slug: 'demo' })?.versions).toEqual(['0.9.0']);
    const home = join(root, 'home');
    const error = await refusal(
      installPack(store, { type: 'pack', slug: 'demo', version: '1.0.0' }, { home }),
    );
    expect(error.code).toBe('ERR_VERSION_NOT_FOUND');
    expect(fetched).toEqual([]);
    expect(await listTree(home).catch(() => [])).toEqual([]);
  });

  it('the AgentHippo index: one artifact under two type aliases is reported and not used', async () => {
    const document = {
      version: 1,
      artifacts: [
        { type: 'agent-pack', slug: 'demo', latestVersion: '1.0.0' },
        { type: 'packs', slug: 'demo', latestVersion: '9.9.9' },
        { type: 'pack', slug: 'other', latestVersion: '1.0.0' },
      ],
    };
    const server = await startServer((_req, res) => void res.end(JSON.stringify(document)));
    const store = await openStore({ url: `${server.url}/index.json`, env: {}, cacheDir: false });
    expect(store.problems.map((p) => p.row)).toEqual([0, 1]);
    expect(store.list().map((a) => a.slug)).toEqual(['other']);
    expect(() => store.resolve({ type: 'pack', slug: 'demo' })).toThrow(
      expect.objectContaining({ code: 'ERR_ARTIFACT_NOT_FOUND' }),
    );
  });
});

// The rule counts the rows as any reader sees them, not only those this client's schema keeps:
// a row refused here for a field another reader takes (AgentHippo's reader keeps `null` texts
// and cuts long ones) would otherwise leave the other row standing alone, and the two readers
// would install different archives under one name.
describe('a duplicate that this schema refuses still makes the name ambiguous', () => {
  it('static: pack/demo twice, one row with displayName null: neither installed', async () => {
    const { root, rows, fetched, serve } = await twoBuilds();
    const server = await serve({
      format: 'packwarden-store/1',
      artifacts: [{ ...rows[0], displayName: null }, rows[1]],
    });
    const store = await openStore({ url: `${server.url}/index.json`, env: {}, cacheDir: false });
    expect(store.problems.map((p) => p.row)).toEqual([0, 1]);
    expect(store.problems[0]!.message).toMatch(/displayName/);
    expect(store.problems[1]!.message).toMatch(/pack\/demo is listed 2 times/);
    expect(store.list()).toEqual([]);
    const home = join(root, 'home');
    const error = await refusal(installPack(store, { type: 'pack', slug: 'demo' }, { home }));
    expect(error.code).toBe('ERR_ARTIFACT_NOT_FOUND');
    expect(fetched).toEqual([]);
    expect(await listTree(home).catch(() => [])).toEqual([]);
  });

  it('static: version 1.0.0 twice in a row, one record refused (publishedAt a number): not installable', async () => {
    const { root, rows, fetched, serve } = await twoBuilds();
    const older = { ...rows[0].versions[0], version: '0.9.0' };
    const row = {
      ...rows[0],
      versions: [{ ...rows[0].versions[0], publishedAt: 0 }, ...rows[1].versions, older],
    };
    const server = await serve({ format: 'packwarden-store/1', artifacts: [row] });
    const store = await openStore({ url: `${server.url}/index.json`, env: {}, cacheDir: false });
    expect(store.problems.map((p) => p.message)).toEqual([
      expect.stringMatching(/^versions\.0: publishedAt/),
      expect.stringMatching(/^versions\.1: pack\/demo@1\.0\.0 is listed 2 times/),
      'demo: latestVersion 1.0.0 is not listed; using 0.9.0',
    ]);
    const home = join(root, 'home');
    const error = await refusal(
      installPack(store, { type: 'pack', slug: 'demo', version: '1.0.0' }, { home }),
    );
    expect(error.code).toBe('ERR_VERSION_NOT_FOUND');
    expect(fetched).toEqual([]);
  });

  it('AgentHippo: pack/demo twice, one row with a latestVersion this schema refuses: not used', async () => {
    const document = {
      version: 1,
      artifacts: [
        { type: 'agent-pack', slug: 'demo', latestVersion: '1.0' },
        { type: 'pack', slug: 'demo', latestVersion: '9.9.9' },
        { type: 'pack', slug: 'other', latestVersion: '1.0.0' },
        // Rows without a string type and slug name nothing and count for nothing.
        { type: 7, slug: 'other', latestVersion: '1.0.0' },
        'other',
      ],
    };
    const server = await startServer((_req, res) => void res.end(JSON.stringify(document)));
    const store = await openStore({ url: `${server.url}/index.json`, env: {}, cacheDir: false });
    expect(store.problems.map((p) => p.row)).toEqual([0, 1, 3, 4]);
    expect(store.problems[1]!.message).toMatch(/pack\/demo is listed 2 times/);
    expect(store.list().map((a) => a.slug)).toEqual(['other']);
    expect(() => store.resolve({ type: 'pack', slug: 'demo' })).toThrow(
      expect.objectContaining({ code: 'ERR_ARTIFACT_NOT_FOUND' }),
    );
  });
});
