import { closeSync, openSync, ftruncateSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import {
  computePackDigest,
  DEFAULT_DIGEST_LIMITS,
  type ComputePackDigestOptions,
} from '../src/index.js';
import { makeTree, removeTree } from './tree.js';

// A sparse file costs no disk space however large it says it is, but every byte of it is read
// and hashed: without a bound on the bytes of content, a pack holding one (or 200,000 of them)
// kept the digest, and so `verifyPack` and `signPack`, reading zeros for hours. The sizes come
// from the fstat each file gets before it is read, so such a pack is refused unread.

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) removeTree(root);
});

function sparse(root: string, path: string, bytes: number): void {
  const fd = openSync(join(root, path), 'w');
  try {
    ftruncateSync(fd, bytes);
  } finally {
    closeSync(fd);
  }
}

async function refusal(root: string, options: ComputePackDigestOptions): Promise<unknown> {
  return computePackDigest(root, options).then(
    () => undefined,
    (error: unknown) => error,
  );
}

const MODES: Array<[string, ComputePackDigestOptions]> = [
  ['calling thread', { parallel: 'never' }],
  ['worker threads', { parallel: 'always', threads: 2 }],
];

describe('maxTotalBytes', () => {
  test('has a finite default, and a sparse terabyte file is refused without being read', async () => {
    // Checked first: without the bound, the file below would be read for many minutes.
    expect(DEFAULT_DIGEST_LIMITS.maxTotalBytes).toBe(4 * 1024 ** 3);
    const root = makeTree([{ path: 'agent.yaml', content: 'kind: Agent\n' }]);
    roots.push(root);
    sparse(root, 'weights.bin', 1024 ** 4);
    const started = Date.now();
    const error = await refusal(root, {});
    expect(error).toMatchObject({ code: 'ERR_DIGEST_TOO_LARGE', path: 'weights.bin' });
    // Read, it would take many minutes; refused from its size, it takes no time at all.
    expect(Date.now() - started).toBeLessThan(5_000);
  }, 20_000);

  test.each(MODES)('content beyond the bound over many files is refused (%s)', async (_, mode) => {
    const files = Array.from({ length: 40 }, (__, i) => ({
      path: `skills/s${String(i).padStart(2, '0')}.md`,
      content: Buffer.alloc(1024, i),
    }));
    const root = makeTree(files);
    roots.push(root);
    // 40 KiB of content: one byte under the bound digests, one byte over does not.
    const within = await computePackDigest(root, { ...mode, limits: { maxTotalBytes: 40 * 1024 } });
    expect(within.totalBytes).toBe(40 * 1024);
    const error = await refusal(root, { ...mode, limits: { maxTotalBytes: 40 * 1024 - 1 } });
    expect(error).toMatchObject({ code: 'ERR_DIGEST_TOO_LARGE' });
  });

  test.each(MODES)(
    'one sparse file among small ones is refused (%s)',
    async (_, mode) => {
      const root = makeTree([
        { path: 'agent.yaml', content: 'kind: Agent\n' },
        { path: 'prompt.md', content: 'hello\n' },
      ]);
      roots.push(root);
      sparse(root, 'big.bin', 256 * 1024 ** 2);
      const error = await refusal(root, { ...mode, limits: { maxTotalBytes: 1024 ** 2 } });
      expect(error).toMatchObject({ code: 'ERR_DIGEST_TOO_LARGE', path: 'big.bin' });
    },
    20_000,
  );
});
