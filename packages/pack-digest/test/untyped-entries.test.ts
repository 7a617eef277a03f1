// The digest on a file system whose readdir gives no entry types (DT_UNKNOWN: NFS, FUSE, XFS
// without ftype). None can be mounted here, so readdirSync is the real one with each Dirent made
// again as Node makes it for DT_UNKNOWN (type 0): the walk must ask lstat and find the same tree.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { computePackDigest } from '../src/index.js';

const untyped = vi.hoisted(() => ({ on: false, made: 0 }));
vi.mock('node:fs', async (actual) =>
  (await import('../../../scripts/untyped-dirents.js')).untypedFs(await actual(), untyped),
);

const roots: string[] = [];
afterEach(() => {
  untyped.on = false;
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function tree(): string {
  const root = mkdtempSync(join(tmpdir(), 'pw-digest-untyped-'));
  roots.push(root);
  mkdirSync(join(root, 'skills', 'greet'), { recursive: true });
  writeFileSync(join(root, 'agent.yaml'), 'apiVersion: agenthippo.ai/v1\n');
  writeFileSync(join(root, 'skills', 'greet', 'SKILL.md'), 'hi\n');
  writeFileSync(join(root, 'run.sh'), '#!/bin/sh\n');
  chmodSync(join(root, 'run.sh'), 0o755);
  symlinkSync('skills/greet/SKILL.md', join(root, 'link'));
  writeFileSync(join(root, 'pack.sig'), 'not part of the digest\n');
  return root;
}

describe('computePackDigest without entry types from readdir', () => {
  test('the same digest and entries as with types: folders, files, modes and symlinks', async () => {
    const root = tree();
    const typed = await computePackDigest(root, { parallel: 'never' });
    untyped.on = true;
    const blind = await computePackDigest(root, { parallel: 'never' });
    expect(untyped.made).toBeGreaterThan(0);
    expect(blind.digest).toBe(typed.digest);
    expect(blind.entries).toEqual(typed.entries);
    expect(blind.entries.map((entry) => `${entry.mode} ${entry.path}`)).toEqual([
      'f agent.yaml',
      'l link',
      'x run.sh',
      'f skills/greet/SKILL.md',
    ]);
  });

  test('a FIFO is refused as with types, not passed over', async () => {
    const root = tree();
    execFileSync('mkfifo', [join(root, 'skills', 'pipe')]);
    const typed = await computePackDigest(root).catch((error: { code?: string }) => error.code);
    untyped.on = true;
    const blind = await computePackDigest(root).catch((error: { code?: string }) => error.code);
    expect(typed).toMatch(/^ERR_DIGEST_/);
    expect(blind).toBe(typed);
  });
});
