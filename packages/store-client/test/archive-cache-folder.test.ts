import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildStaticStore, installPack, openStore } from '../src/index.js';
import { listTree, serveDir, tempDir, writePack } from './helpers.js';

// The archive cache lives under $PACKWARDEN_HOME/cache/store, which README "The index cache" counts
// as writable by others (a shared home, a restored CI cache, a sandboxed pack). Its `archives`
// folder was used wherever it led: made a symlink, it had every install write `<sha256>.tar.gz`
// (and its temporary file) into the folder it names, and delete a file of that name found there
// whose bytes did not match.

describe('the archive cache folder is used only when it is a real folder of this user', () => {
  it('`archives` a symlink to another folder: nothing written or deleted there; the install still succeeds', async () => {
    const root = await tempDir();
    await writePack(join(root, 'packs', 'demo'), 'demo', '1.0.0', { 'skills/a.md': 'x' });
    const out = join(root, 'store');
    const built = await buildStaticStore(join(root, 'packs'), { out });
    const { sha256, size } = built.packs[0]!;
    const server = await serveDir(out);

    // Elsewhere: a folder of the user's that the cache must never touch, holding a file with
    // the cached archive's name and size but other bytes (what the cache would delete).
    const elsewhere = join(root, 'elsewhere');
    await mkdir(elsewhere);
    const planted = Buffer.alloc(size, 0x61);
    await writeFile(join(elsewhere, `${sha256}.tar.gz`), planted);
    const cacheDir = join(root, 'cache');
    await mkdir(cacheDir);
    await symlink(elsewhere, join(cacheDir, 'archives'));

    const store = await openStore({ url: `${server.url}/index.json`, env: {}, cacheDir });
    for (const force of [false, true]) {
      const result = await installPack(
        store,
        { type: 'pack', slug: 'demo' },
        { home: join(root, 'home'), force },
      );
      expect(result.archiveSha256).toBe(sha256);
      expect(await readFile(join(result.dir, 'skills', 'a.md'), 'utf8')).toBe('x');
    }

    expect(await readdir(elsewhere)).toEqual([`${sha256}.tar.gz`]);
    expect((await readFile(join(elsewhere, `${sha256}.tar.gz`))).equals(planted)).toBe(true);
    expect(await listTree(cacheDir)).toEqual(['archives']);
  });
});
