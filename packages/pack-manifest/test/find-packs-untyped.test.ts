// findPackFolders on a file system whose readdir gives no entry types (DT_UNKNOWN: NFS, FUSE,
// XFS without ftype). None can be mounted here, so readdir is the real one with each Dirent made
// again as Node makes it for DT_UNKNOWN (type 0): every `is…()` answers no.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { findPackFolders, isPackManifestError } from '../src/resolve-entry.js';

const untyped = vi.hoisted(() => ({ on: false, made: 0 }));
vi.mock('node:fs/promises', async (actual) =>
  (await import('../../../scripts/untyped-dirents.js')).untypedFsPromises(
    await actual(),
    await import('node:fs'),
    untyped,
  ),
);

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'pw-find-untyped-'));
  untyped.on = true;
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

function pack(...segments: string[]): string {
  const dir = join(root, ...segments);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'agent.yaml'), 'apiVersion: agenthippo.ai/v1\n');
  return dir;
}

describe('findPackFolders without entry types from readdir', () => {
  it('the simulation is what such a file system gives: entries that are nothing', async () => {
    const { readdir } = await import('node:fs/promises');
    pack('a');
    const [entry] = await readdir(root, { withFileTypes: true });
    expect(entry?.name).toBe('a');
    expect([entry?.isDirectory(), entry?.isFile(), entry?.isSymbolicLink()]).toEqual([
      false,
      false,
      false,
    ]);
  });

  it('finds the same packs as with types, nested and at the root', async () => {
    const a = pack('a-pack');
    const deep = pack('team', 'reviewer', '1.0.0');
    pack('a-pack', 'inner');
    untyped.on = false;
    const typed = await findPackFolders(root);
    untyped.on = true;
    expect(typed).toEqual([a, deep]);
    expect(await findPackFolders(root)).toEqual(typed);
    expect(await findPackFolders(a)).toEqual([a]);
  });

  it('still refuses a pack too deep and a pack behind a symlink', async () => {
    pack('1', '2', '3');
    await expect(findPackFolders(root, { maxDepth: 2 })).rejects.toSatisfy(
      (error: unknown) => isPackManifestError(error) && error.code === 'ERR_PACK_SEARCH_TOO_LARGE',
    );
    rmSync(join(root, '1'), { recursive: true });
    const outside = mkdtempSync(join(tmpdir(), 'pw-find-untyped-outside-'));
    try {
      mkdirSync(join(outside, 'p'));
      writeFileSync(join(outside, 'p', 'agent.yaml'), 'x: 1\n');
      symlinkSync(outside, join(root, 'link'));
      await expect(findPackFolders(root)).rejects.toSatisfy(
        (error: unknown) => isPackManifestError(error) && error.code === 'ERR_PACK_SEARCH_SYMLINK',
      );
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});
