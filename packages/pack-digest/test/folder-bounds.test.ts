import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, test } from 'vitest';
import {
  computePackDigest,
  DEFAULT_DIGEST_LIMITS,
  formatManifest,
  type ComputePackDigestOptions,
  type PackDigestError,
} from '@packwarden/pack-digest';
import { makeTree, removeTree } from './tree.js';

// Folders are not entries (SPEC rule 2), so `maxEntries` never counts them: `maxFolders` bounds
// how many a walk lists. Both hashing paths must refuse alike, leaving no thread running and no
// folder open.

const roots: string[] = [];
afterEach(() => roots.splice(0).forEach(removeTree));

function tree(files: Parameters<typeof makeTree>[0] = []): string {
  const root = makeTree(files);
  roots.push(root);
  return root;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

// Vector `single-file` (SPEC.md): empty folders beside it must leave this digest unchanged.
const AGENT = { path: 'agent.yaml', content: 'apiVersion: agenthippo.ai/v1\n' };
const SINGLE_FILE_DIGEST = '79fbc9d1c95485f580604a4baf0fe1ef96e91ba005620b76b283c2753106f6f0';

/** Threads and open file descriptors of this process, where /proc lists them. */
function liveResources(): { threads: number; fds: number } | undefined {
  if (!existsSync('/proc/self/task')) return undefined;
  return {
    threads: readdirSync('/proc/self/task').length,
    fds: readdirSync('/proc/self/fd').length,
  };
}

// Threads start at the second file: the root's files are listed before any folder is read.
const MODES: Array<[string, ComputePackDigestOptions]> = [
  ['calling thread only', { parallel: 'never' }],
  ['hashing threads started', { parallel: 'always', threads: 2 }],
];

async function refusal(root: string, options: ComputePackDigestOptions): Promise<PackDigestError> {
  return computePackDigest(root, options).then(
    () => expect.fail('the digest was computed'),
    (thrown: PackDigestError) => thrown,
  );
}

/** `count` empty folders: half side by side at the root, half nested one in the next. */
function emptyFolders(root: string, count: number): void {
  const flat = Math.ceil(count / 2);
  for (let i = 0; i < flat; i++) mkdirSync(join(root, `e${i}`));
  let nested = root;
  for (let i = flat; i < count; i++) mkdirSync((nested = join(nested, `n${i}`)));
}

// Node starts its own pool threads on first use (readlink does): start them before counting.
beforeAll(async () => {
  await computePackDigest(tree([AGENT, { path: 'l', symlink: 'agent.yaml' }]));
});

describe('maxFolders', () => {
  // A walk of the default bound itself is left out: making and removing 100,000 folders took
  // 13 s and 42 s here (the walk, 2 s).
  test('defaults to 100,000', () => {
    expect(DEFAULT_DIGEST_LIMITS.maxFolders).toBe(100_000);
  });

  test.each(MODES)(
    'one folder more than maxFolders is refused (%s), leaving nothing running or open',
    async (_label, mode) => {
      const root = tree([AGENT, ...Array.from({ length: 8 }, (_, i) => ({ path: `f${i}` }))]);
      emptyFolders(root, 7);
      const before = liveResources();
      const error = await refusal(root, { ...mode, limits: { maxFolders: 6 } });
      expect(error.code).toBe('ERR_DIGEST_TOO_MANY_FOLDERS');
      expect(error.message).toContain('more than 6 folders');
      expect(error.path).toMatch(/^(e\d|n\d(\/n\d)*)$/);
      expect(liveResources()).toEqual(before);
    },
  );

  test.each(MODES)(
    'exactly maxFolders empty folders digest as if they were not there (%s)',
    async (_label, mode) => {
      const root = tree([AGENT]);
      emptyFolders(root, 7);
      const atBound = await computePackDigest(root, { ...mode, limits: { maxFolders: 7 } });
      expect(atBound.digest).toBe(SINGLE_FILE_DIGEST);
      expect((await computePackDigest(root, mode)).digest).toBe(SINGLE_FILE_DIGEST);
    },
  );

  test('folders holding files count, a root pack.sig folder too, the root itself does not', async () => {
    const root = tree([
      AGENT,
      { path: 'skills/web/SKILL.md', content: 'web' },
      { path: 'pack.sig/notes.txt', content: 'not a signature' },
    ]);
    // skills, skills/web, pack.sig: three folders below the root.
    await expect(computePackDigest(root, { limits: { maxFolders: 2 } })).rejects.toMatchObject({
      code: 'ERR_DIGEST_TOO_MANY_FOLDERS',
    });
    const { entries } = await computePackDigest(root, { limits: { maxFolders: 3 } });
    expect(entries.map((entry) => entry.path)).toEqual([
      'agent.yaml',
      'pack.sig/notes.txt',
      'skills/web/SKILL.md',
    ]);
  });
});

describe('crowded folders and names read again as bytes', () => {
  test.each(MODES)(
    'a folder listing more names than the bounds allow is refused, and closed (%s)',
    async (_label, mode) => {
      const root = tree([AGENT]);
      const crowded = join(root, 'crowded');
      mkdirSync(crowded);
      for (let i = 0; i < 3000; i++) writeFileSync(join(crowded, `f${i}`), '');
      for (let i = 0; i < 300; i++) mkdirSync(join(crowded, `d${i}`));
      const before = liveResources();
      const error = await refusal(root, { ...mode, limits: { maxEntries: 100, maxFolders: 50 } });
      expect(['ERR_DIGEST_TOO_MANY_ENTRIES', 'ERR_DIGEST_TOO_MANY_FOLDERS']).toContain(error.code);
      expect(error.path).toMatch(/^crowded\/[fd]\d+$/);
      expect(liveResources()).toEqual(before);
    },
  );

  test('a folder listed again as bytes for a U+FFFD name lists each name once', async () => {
    // Among 200 names, some are listed before the U+FFFD one and are met again when the folder
    // is listed as bytes: they must not count twice, collide with themselves, or queue twice.
    const files = Array.from({ length: 150 }, (_, i) => ({
      path: `d/${i % 3 === 0 ? `cafe\u0301${i}` : `f${i}`}.md`,
      content: `${i}`,
    }));
    const folders = Array.from({ length: 49 }, (_, i) => ({ path: `d/s${i}/x`, content: `s${i}` }));
    const root = tree([...files, ...folders, { path: 'd/\ufffd.md', content: 'replacement' }]);
    // 50 folders (d and its 49) and 200 files: exactly the bounds.
    const { entries, digest } = await computePackDigest(root, {
      limits: { maxEntries: 200, maxFolders: 50 },
    });
    expect(entries).toHaveLength(200);
    expect(new Set(entries.map((entry) => entry.path)).size).toBe(200);
    expect(entries.find((entry) => entry.path === 'd/\ufffd.md')?.sha256).toBe(
      sha256('replacement'),
    );
    expect(entries.find((entry) => entry.path === 'd/caf\u00e90.md')?.sha256).toBe(sha256('0'));
    expect(digest).toBe(sha256(formatManifest(entries)));

    writeFileSync(Buffer.concat([Buffer.from(join(root, 'd') + '/'), Buffer.from([0xff])]), 'x');
    const before = liveResources();
    expect((await refusal(root, {})).code).toBe('ERR_DIGEST_INVALID_UTF8_NAME');
    expect(liveResources()).toEqual(before);
  });
});
