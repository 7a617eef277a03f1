import { execFileSync } from 'node:child_process';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { buildStaticStore, extractArchive, installPack, openStore } from '../src/index.js';
import { makeTgz, serveDir, tempDir, writePack } from './helpers.js';

// Without `force`, a target that is not empty is refused. It was only judged when the install
// started: a folder that another process filled while the archive downloaded was renamed aside and
// deleted at the final rename, its files lost, and the install reported `replaced: true`.

/** Another process writes `file` while the install runs: a real child, not this one. */
function otherProcessWrites(file: string, content: string): void {
  execFileSync(process.execPath, [
    '-e',
    'require("node:fs").writeFileSync(process.argv[1], process.argv[2])',
    file,
    content,
  ]);
}

describe('a target filled while the install runs is never replaced without force', () => {
  it('installPack `to`: ERR_TARGET_NOT_EMPTY, the other process’s file kept, nothing left behind', async () => {
    const root = await tempDir();
    await writePack(join(root, 'packs', 'demo'), 'demo', '1.0.0', { 'skills/a.md': 'new' });
    const out = join(root, 'store');
    await buildStaticStore(join(root, 'packs'), { out });
    const parent = join(root, 'work');
    const dir = join(parent, 'agent');
    await mkdir(dir, { recursive: true }); // empty: the install may use it
    const server = await serveDir(out, {
      override: (req) => {
        // While the archive is being fetched, someone else starts using the folder.
        if (req.url?.endsWith('.tar.gz')) otherProcessWrites(join(dir, 'notes.md'), 'mine');
        return false;
      },
    });
    const store = await openStore({ url: `${server.url}/index.json`, env: {}, cacheDir: false });

    await expect(
      installPack(store, { type: 'pack', slug: 'demo' }, { to: dir, home: join(root, 'home') }),
    ).rejects.toMatchObject({ code: 'ERR_TARGET_NOT_EMPTY' });
    expect(await readdir(dir)).toEqual(['notes.md']);
    expect(await readFile(join(dir, 'notes.md'), 'utf8')).toBe('mine');
    expect((await readdir(parent)).sort()).toEqual(['agent']);
  });

  it('extractArchive: ERR_TARGET_NOT_EMPTY, the other process’s file kept, no staging folder', async () => {
    const root = await tempDir();
    const dest = join(root, 'dest');
    await mkdir(dest); // empty: the extraction may use it
    const archive = await makeTgz([{ name: 'new.txt', content: 'n' }]);
    let raced = false;
    const source = new Readable({
      read() {
        if (!raced) {
          raced = true;
          otherProcessWrites(join(dest, 'notes.md'), 'mine');
          this.push(archive);
          this.push(null);
        }
      },
    });

    await expect(extractArchive(source, dest)).rejects.toMatchObject({
      code: 'ERR_TARGET_NOT_EMPTY',
    });
    expect(await readdir(dest)).toEqual(['notes.md']);
    expect(await readFile(join(dest, 'notes.md'), 'utf8')).toBe('mine');
    expect(await readdir(root)).toEqual(['dest']);
  });
});
