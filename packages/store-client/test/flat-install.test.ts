import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildStaticStore, installPack, openStore } from '../src/index.js';
import { listTree, tempDir, writePack } from './helpers.js';

// Issue 9 W13: `to: DIR` cleared `current.txt.tmp-*` files and restored `.DIR.old-*` folders
// that someone else had put in DIR's parent. The parent is the caller's folder: only what this
// install creates there may be touched.

describe('installPack with `to` touches only what it created in the parent folder (issue 9 W13)', () => {
  it("someone else's current.txt.tmp-*, .DIR.old-* and .DIR.staging-* survive, byte for byte", async () => {
    const root = await tempDir();
    await writePack(join(root, 'packs', 'demo'), 'demo', '1.0.0', { 'skills/a.md': 'new' });
    const out = join(root, 'store');
    await buildStaticStore(join(root, 'packs'), { out });
    const store = await openStore({ url: out, env: {}, cacheDir: false });

    const parent = join(root, 'work');
    const dir = join(parent, 'agent');
    await mkdir(parent);
    // Planted by "someone else": names that look like the installer's own leftovers.
    await writeFile(join(parent, 'current.txt.tmp-0123456789ab'), 'theirs 1');
    await writeFile(join(parent, 'current.txt'), 'theirs 2');
    await mkdir(join(parent, '.agent.old-0123456789ab'));
    await writeFile(join(parent, '.agent.old-0123456789ab', 'notes.md'), 'theirs 3');
    await mkdir(join(parent, '.agent.staging-0123456789ab'));
    await writeFile(join(parent, '.agent.staging-0123456789ab', 'draft'), 'theirs 4');
    await mkdir(join(parent, '.other.old-0123456789ab'));
    const before = await listTree(parent);

    // Into a missing DIR, then again with force over the installed one.
    for (const force of [false, true]) {
      const result = await installPack(
        store,
        { type: 'pack', slug: 'demo' },
        { to: dir, force, home: join(root, 'home') },
      );
      expect(result.dir).toBe(dir);
      expect(await readFile(join(dir, 'skills', 'a.md'), 'utf8')).toBe('new');
      const after = (await listTree(parent)).filter(
        (p) => p === 'agent/' || !p.startsWith('agent/'),
      );
      expect(after).toEqual(before.concat('agent/').sort());
      expect(await readFile(join(parent, 'current.txt.tmp-0123456789ab'), 'utf8')).toBe('theirs 1');
      expect(await readFile(join(parent, 'current.txt'), 'utf8')).toBe('theirs 2');
      expect(await readFile(join(parent, '.agent.old-0123456789ab', 'notes.md'), 'utf8')).toBe(
        'theirs 3',
      );
      expect(await readFile(join(parent, '.agent.staging-0123456789ab', 'draft'), 'utf8')).toBe(
        'theirs 4',
      );
    }
    // No lock of this install is left either.
    expect((await readdir(parent)).filter((n) => n.endsWith('.lock'))).toEqual([]);
  });
});
