import { createHash } from 'node:crypto';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { installPack, isStoreError, openStore, type Store } from '../src/index.js';
import { HOSTILE_CASES } from './hostile-corpus.js';
import { listTree } from './helpers.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';

// One static store serving every hostile archive under its own slug; each is installed into a
// home that already holds a good install and sentinel folders next to the target and above it.
let root: string;
let outside: string;
let home: string;
let store: Store;
const slugOf = (i: number) => `hostile-${i}`;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'store-client-hostile-'));
  outside = join(root, 'outside');
  home = join(root, 'home');
  await mkdir(outside);
  const storeDir = join(root, 'store');
  await mkdir(storeDir);
  const artifacts = [];
  for (let i = 0; i < HOSTILE_CASES.length; i++) {
    const archive = await HOSTILE_CASES[i]!.build(outside);
    const file = `${slugOf(i)}.tar.gz`;
    await writeFile(join(storeDir, file), archive);
    artifacts.push({
      type: 'pack',
      slug: slugOf(i),
      latestVersion: '1.0.0',
      versions: [
        {
          version: '1.0.0',
          archive: file,
          size: archive.length,
          sha256: createHash('sha256').update(archive).digest('hex'),
          digest: '0'.repeat(64),
        },
      ],
    });
  }
  await writeFile(
    join(storeDir, 'index.json'),
    JSON.stringify({ format: 'packwarden-store/1', artifacts }),
  );
  store = await openStore({
    url: pathToFileURL(join(storeDir, 'index.json')).href,
    cacheDir: false,
    env: {},
  });
  return () => rm(root, { recursive: true, force: true });
}, 60_000);

describe('hostile archive corpus', () => {
  it('has at least 50 archives and every one is served', () => {
    expect(HOSTILE_CASES.length).toBeGreaterThanOrEqual(50);
    expect(store.problems).toEqual([]);
    expect(store.list()).toHaveLength(HOSTILE_CASES.length);
  });

  HOSTILE_CASES.forEach((hostile, i) => {
    it(`refuses: ${hostile.name} (${hostile.code})`, async () => {
      const slug = slugOf(i);
      const agents = join(home, 'agents');
      const packDir = join(agents, slug);
      // A previous good install, a sentinel next to the target, one in the parent, and one above.
      await mkdir(join(packDir, '0.9.0'), { recursive: true });
      await writeFile(join(packDir, '0.9.0', 'agent.yaml'), 'previous\n');
      await writeFile(join(packDir, 'current.txt'), '0.9.0\n');
      await mkdir(join(packDir, 'sentinel'), { recursive: true });
      await mkdir(join(agents, 'sentinel'), { recursive: true });
      const before = { home: await listTree(home), outside: await listTree(outside) };

      const error = await installPack(
        store,
        { type: 'pack', slug, version: '1.0.0' },
        { home, env: {} },
      ).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isStoreError(error), String(error)).toBe(true);
      expect((error as { code: string }).code, (error as Error).message).toBe(hostile.code);
      expect((error as Error).message.length).toBeGreaterThan(10);
      // Nothing written anywhere: home (sentinels, previous install, no staging or lock left) and outside.
      expect(await listTree(home)).toEqual(before.home);
      expect(await listTree(outside)).toEqual(before.outside);
      expect((await readdir(packDir)).filter((n) => n.startsWith('.'))).toEqual([]);
    });
  });
});
