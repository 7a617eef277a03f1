import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, test } from 'vitest';
import { computePackDigest, type ComputePackDigestOptions } from '@packwarden/pack-digest';
import { makeTree, removeTree, type TreeFile } from './tree.js';

// The hashing threads start while the walk is still listing files, once the count alone says
// they pay (README, "Both cores when it pays"), and get the files in several messages as the
// walk goes on. Each path must give the digest SPEC.md defines, and no failure may leave a
// thread running.

const roots: string[] = [];
afterEach(() => roots.splice(0).forEach(removeTree));

function tree(files: readonly TreeFile[]): string {
  const root = makeTree(files);
  roots.push(root);
  return root;
}

/**
 * Threads alive in this process. Where /proc lists them, every OS thread: a worker's exists from
 * `new Worker` until it has exited, so one that is still booting counts too. Elsewhere, the
 * workers Node's diagnostic report lists (only those that have booted).
 */
function liveThreads(): number {
  if (existsSync('/proc/self/task')) return readdirSync('/proc/self/task').length;
  const report = process.report.getReport() as unknown as { workers: unknown[] };
  return report.workers.length;
}

/** `count` small files spread over folders of 100, each with its own content. */
function manyFiles(count: number): TreeFile[] {
  return Array.from({ length: count }, (_, i) => ({
    path: `d${String(Math.floor(i / 100)).padStart(2, '0')}/f${i}.txt`,
    content: `file ${i}\n`.repeat(1 + (i % 7)),
    mode: i % 11 === 0 ? ('x' as const) : ('f' as const),
  }));
}

// Node starts its own pool threads on first use (readlink does): start them before counting.
beforeAll(async () => {
  await computePackDigest(
    tree([
      { path: 'a', content: 'a' },
      { path: 'l', symlink: 'a' },
    ]),
  );
});

describe('threads started during the walk', () => {
  test('2,600 files (over the 2,048 mark, handed out in three messages) give the single-thread digest', async () => {
    const files = manyFiles(2600);
    const root = tree([...files, { path: 'link', symlink: 'd00/f0.txt' }]);
    const before = liveThreads();

    const threaded = await computePackDigest(root, { threads: 2 });
    const single = await computePackDigest(root, { parallel: 'never' });

    expect(threaded.digest).toBe(single.digest);
    expect(threaded.entries).toEqual(single.entries);
    expect(threaded.entries).toHaveLength(2601);
    const sample = files[2599]!;
    expect(threaded.entries.find((e) => e.path === sample.path)?.sha256).toBe(
      createHash('sha256').update(sample.content!).digest('hex'),
    );
    expect(liveThreads()).toBe(before);
  });

  test('the walk lets the event loop run only once the threads have started', async () => {
    // 26 folders of 100 files: the 2,048th file is listed in the 21st folder. The walk used to
    // yield after 16 folders, where a caller's other work (the CLI parses agent.yaml) ran before
    // any thread had started, and delayed them.
    const root = tree(manyFiles(2600));
    const before = liveThreads();
    let threadsAtFirstTurn: number | undefined;
    setImmediate(() => (threadsAtFirstTurn = liveThreads()));
    const digest = await computePackDigest(root, { threads: 2 });
    expect(digest.entries).toHaveLength(2600);
    expect(threadsAtFirstTurn).toBeGreaterThan(before);
    expect(liveThreads()).toBe(before);
  });

  test('until then it yields every 256 folders, and every 16 when threads cannot start', async () => {
    const root = tree([{ path: 'agent.yaml', content: 'x' }]);
    for (let i = 0; i < 600; i++) mkdirSync(join(root, `z${i}`));
    /** Turns of the event loop while the digest runs (one per turn, until it is done). */
    const turnsDuring = async (options: ComputePackDigestOptions) => {
      let turns = 0;
      let done = false;
      const tick = () => {
        if (done) return;
        turns++;
        setImmediate(tick);
      };
      setImmediate(tick);
      await computePackDigest(root, options);
      done = true;
      return turns;
    };
    // 601 folders: after 256 and 512 (threads may still start: one file listed so far).
    expect(await turnsDuring({ threads: 2 })).toBeLessThanOrEqual(4);
    // One thread: none can start, so the walk yields every 16 folders, as it always did.
    expect(await turnsDuring({ threads: 1 })).toBeGreaterThanOrEqual(600 / 16 - 2);
  });

  test('20,000 files with 4 KiB paths (within every bound): the threads give the single-thread digest, not an out-of-memory error', async () => {
    // Each hashing thread holds the whole list of absolute paths in a 64 MiB heap: this pack ran
    // them out of memory (ERR_WORKER_OUT_OF_MEMORY, an untyped error) while `parallel: 'never'`
    // digested it, so whether a pack verified depended on the machine's core count.
    const segments = Array.from(
      { length: 15 },
      (_, i) => `${i}`.padStart(3, '0') + 'x'.repeat(250),
    );
    const root = tree([]);
    const folder = join(root, ...segments);
    mkdirSync(folder, { recursive: true });
    for (let i = 0; i < 20_000; i++)
      writeFileSync(join(folder, `f${String(i).padStart(6, '0')}${'y'.repeat(200)}`), `${i % 97}`);
    const before = liveThreads();

    const single = await computePackDigest(root, { parallel: 'never' });
    expect(Math.max(...single.entries.map((entry) => Buffer.byteLength(entry.path)))).toBeLessThan(
      4096,
    );
    const threaded = await computePackDigest(root, { threads: 2 });
    expect(threaded.digest).toBe(single.digest);
    expect(threaded.entries).toEqual(single.entries);
    expect(liveThreads()).toBe(before);
  }, 120_000);

  test('with parallel: always they start at the second file, and give the same digest', async () => {
    const root = tree(manyFiles(1200));
    const always = await computePackDigest(root, { parallel: 'always', threads: 2 });
    const single = await computePackDigest(root, { parallel: 'never' });
    expect(always.entries).toEqual(single.entries);
    expect(always.digest).toBe(single.digest);
  });
});

// Threads start at the second file with `parallel: 'always'`: the root's files are listed before
// any folder is read, so every refusal below comes from a folder read after the threads started.
const STARTED: ComputePackDigestOptions = { parallel: 'always', threads: 2 };

describe('no thread outlives a failed digest', () => {
  const rootFiles: TreeFile[] = Array.from({ length: 8 }, (_, i) => ({
    path: `f${i}.md`,
    content: `${i}`,
  }));

  test.each([
    [
      'ERR_DIGEST_UNSUPPORTED_TYPE',
      (root: string) => execFileSync('mkfifo', [join(root, 'z', 'fifo')]),
      {},
    ],
    [
      'ERR_DIGEST_NFC_COLLISION',
      (root: string) => {
        writeFileSync(join(root, 'z', 'caf\u00e9'), '1');
        writeFileSync(join(root, 'z', 'cafe\u0301'), '2');
      },
      {},
    ],
    [
      'ERR_DIGEST_TOO_MANY_ENTRIES',
      (root: string) => writeFileSync(join(root, 'z', 'one-too-many'), ''),
      { maxEntries: 9 },
    ],
    [
      'ERR_DIGEST_TOO_MANY_FOLDERS',
      (root: string) => mkdirSync(join(root, 'z', 'y')),
      { maxFolders: 1 },
    ],
    [
      'ERR_DIGEST_TOO_DEEP',
      (root: string) => mkdirSync(join(root, 'z', 'y', 'x'), { recursive: true }),
      { maxDepth: 2 },
    ],
    [
      'ERR_DIGEST_PATH_TOO_LONG',
      (root: string) => writeFileSync(join(root, 'z', 'n'.repeat(40)), ''),
      { maxPathBytes: 30 },
    ],
  ] as const)('%s found after the threads started', async (code, spoil, limits) => {
    const root = tree([...rootFiles, { path: 'z/ok.md', content: 'ok' }]);
    spoil(root);
    const before = liveThreads();
    await expect(computePackDigest(root, { ...STARTED, limits })).rejects.toMatchObject({ code });
    expect(liveThreads()).toBe(before);
  });

  test('an abort in the middle of the walk, after the threads started', async () => {
    // 40 folders: the walk yields to the event loop after 16, where the abort lands.
    const root = tree([
      ...rootFiles,
      ...Array.from({ length: 40 }, (_, i) => ({ path: `z${i}/f.md`, content: `${i}` })),
    ]);
    const before = liveThreads();
    const controller = new AbortController();
    const digest = computePackDigest(root, { ...STARTED, signal: controller.signal });
    setImmediate(() => controller.abort(new Error('stop')));
    await expect(digest).rejects.toMatchObject({ code: 'ERR_DIGEST_ABORTED' });
    expect(liveThreads()).toBe(before);
  });
});
