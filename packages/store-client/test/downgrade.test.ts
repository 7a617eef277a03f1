import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildStaticStore, installPack, isStoreError, openStore } from '../src/index.js';
import { serveDir, tempDir, writePack } from './helpers.js';

// Issue 9 W5: a store whose `latest` is older than what is installed rolled `current.txt` back.

async function storeOf(root: string, name: string, versions: string[]) {
  for (const v of versions) await writePack(join(root, name, 'packs', 'demo', v), 'demo', v);
  const out = join(root, name, 'store');
  await buildStaticStore(join(root, name, 'packs'), { out });
  const archiveHits: string[] = [];
  const server = await serveDir(out, {
    override: (req) => {
      if (req.url?.endsWith('.tar.gz')) archiveHits.push(req.url);
      return false;
    },
  });
  const store = await openStore({ url: `${server.url}/index.json`, env: {}, cacheDir: false });
  return { store, archiveHits };
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as { code: string; message: string },
  );

describe('installPack refuses a downgrade unless asked (issue 9 W5)', () => {
  it('a store whose latest went backwards: ERR_DOWNGRADE_REFUSED, nothing downloaded, current.txt kept; allowDowngrade installs it', async () => {
    const root = await tempDir();
    const home = join(root, 'home');
    const newer = await storeOf(root, 'newer', ['2.0.0']);
    await installPack(newer.store, { type: 'pack', slug: 'demo' }, { home });
    const older = await storeOf(root, 'older', ['1.0.0']);
    const packDir = join(home, 'agents', 'demo');

    const error = await failure(installPack(older.store, { type: 'pack', slug: 'demo' }, { home }));
    expect(isStoreError(error)).toBe(true);
    expect(error?.code).toBe('ERR_DOWNGRADE_REFUSED');
    expect(error?.message).toContain('1.0.0');
    expect(error?.message).toContain('2.0.0');
    expect(error?.message).toContain('allowDowngrade');
    expect(await readFile(join(packDir, 'current.txt'), 'utf8')).toBe('2.0.0\n');
    expect((await readdir(packDir)).sort()).toEqual(['2.0.0', 'current.txt']);
    expect(older.archiveHits).toEqual([]);
    // Also with an explicit version, and with force (force replaces, it does not downgrade).
    expect(
      (
        await failure(
          installPack(
            older.store,
            { type: 'pack', slug: 'demo', version: '1.0.0' },
            { home, force: true },
          ),
        )
      )?.code,
    ).toBe('ERR_DOWNGRADE_REFUSED');

    const result = await installPack(
      older.store,
      { type: 'pack', slug: 'demo' },
      { home, allowDowngrade: true },
    );
    expect(result.version).toBe('1.0.0');
    expect(await readFile(join(packDir, 'current.txt'), 'utf8')).toBe('1.0.0\n');
    // Upgrading again needs nothing special.
    await installPack(newer.store, { type: 'pack', slug: 'demo' }, { home, force: true });
    expect(await readFile(join(packDir, 'current.txt'), 'utf8')).toBe('2.0.0\n');
  });

  it('a current.txt that names no version cannot rule a downgrade out: refused, left as it was', async () => {
    const root = await tempDir();
    const home = join(root, 'home');
    const { store, archiveHits } = await storeOf(root, 's', ['1.0.0']);
    await installPack(store, { type: 'pack', slug: 'demo' }, { home });
    const current = join(home, 'agents', 'demo', 'current.txt');
    await writeFile(current, 'not a version\n');
    const error = await failure(
      installPack(store, { type: 'pack', slug: 'demo' }, { home, force: true }),
    );
    expect(error?.code).toBe('ERR_DOWNGRADE_REFUSED');
    expect(await readFile(current, 'utf8')).toBe('not a version\n');
    expect(archiveHits).toHaveLength(1);
  });
});
