import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findPackFolders, isPackManifestError } from '../src/resolve-entry.js';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'pw-find-packs-'));
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

describe('findPackFolders', () => {
  it('lists nested pack folders in byte order and does not descend into a pack', async () => {
    const b = pack('b-pack');
    const a = pack('a-pack');
    const versioned = pack('team', 'reviewer', '1.0.0');
    pack('a-pack', 'inner'); // inside a pack: part of it, not a pack of its own
    expect(await findPackFolders(root)).toEqual([a, b, versioned]);
  });

  it('returns the root when it is a pack', async () => {
    pack();
    expect(await findPackFolders(root)).toEqual([root]);
  });

  it('skips node_modules, dot folders, symlinked folders and a symlinked agent.yaml', async () => {
    pack('node_modules', 'evil');
    pack('.hidden', 'evil');
    const outside = mkdtempSync(join(tmpdir(), 'pw-find-outside-'));
    try {
      writeFileSync(join(outside, 'agent.yaml'), 'x');
      mkdirSync(join(outside, 'docs'));
      symlinkSync(join(outside, 'docs'), join(root, 'linked-docs'));
      symlinkSync(join(outside, 'missing'), join(root, 'dangling'));
      symlinkSync(outside, join(root, '.linked-hidden'));
      mkdirSync(join(root, 'linked-manifest'));
      symlinkSync(join(outside, 'agent.yaml'), join(root, 'linked-manifest', 'agent.yaml'));
      expect(await findPackFolders(root)).toEqual([]);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('refuses a symlink that leads to a pack folder instead of leaving that pack out', async () => {
    // `pack verify --all` would report every pack verified while `packwarden run linked` ran a
    // pack it never saw.
    const real = pack('a-real');
    const outside = mkdtempSync(join(tmpdir(), 'pw-find-outside-'));
    try {
      writeFileSync(join(outside, 'agent.yaml'), 'x');
      mkdirSync(join(root, 'team'));
      symlinkSync(outside, join(root, 'team', 'linked'));
      const error = await findPackFolders(root).catch((caught: unknown) => caught);
      expect(isPackManifestError(error) && error.code).toBe('ERR_PACK_SEARCH_SYMLINK');
      expect((error as Error).message).toContain(join(root, 'team', 'linked'));
      // A symlink to a pack folder inside the tree is refused alike.
      rmSync(join(root, 'team', 'linked'));
      symlinkSync(real, join(root, 'team', 'linked'));
      const inside = await findPackFolders(root).catch((caught: unknown) => caught);
      expect(isPackManifestError(inside) && inside.code).toBe('ERR_PACK_SEARCH_SYMLINK');
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('refuses a pack deeper than maxDepth instead of leaving it out', async () => {
    // Stopping at maxDepth left the pack out of `pack verify --all` (exit 0) while
    // `packwarden run 1/2/3` ran it.
    pack('1', '2', '3');
    mkdirSync(join(root, 'x', 'y', 'z', 'deeper'), { recursive: true });
    const error = await findPackFolders(root, { maxDepth: 2 }).catch((e: unknown) => e);
    expect(isPackManifestError(error) && error.code).toBe('ERR_PACK_SEARCH_TOO_LARGE');
    expect((error as Error).message).toContain(join(root, '1', '2', '3'));
    expect(await findPackFolders(root, { maxDepth: 3 })).toEqual([join(root, '1', '2', '3')]);
    // Deep folders without a pack are searched, not refused.
    rmSync(join(root, '1'), { recursive: true });
    expect(await findPackFolders(root, { maxDepth: 2 })).toEqual([]);
  });

  it('refuses a symlink to a folder that holds a pack deeper down (also through a second link)', async () => {
    const real = pack('a-real');
    const outside = mkdtempSync(join(tmpdir(), 'pw-find-outside-'));
    const further = mkdtempSync(join(tmpdir(), 'pw-find-further-'));
    try {
      mkdirSync(join(outside, 'team', 'reviewer'), { recursive: true });
      writeFileSync(join(outside, 'team', 'reviewer', 'agent.yaml'), 'x');
      symlinkSync(outside, join(root, 'linked'));
      const error = await findPackFolders(root).catch((caught: unknown) => caught);
      expect(isPackManifestError(error) && error.code).toBe('ERR_PACK_SEARCH_SYMLINK');
      expect((error as Error).message).toContain(join(root, 'linked'));

      // Two links: root/linked -> outside (no pack), outside/hop -> further/deep/pack.
      rmSync(join(outside, 'team'), { recursive: true });
      mkdirSync(join(further, 'deep', 'pack'), { recursive: true });
      writeFileSync(join(further, 'deep', 'pack', 'agent.yaml'), 'x');
      symlinkSync(further, join(outside, 'hop'));
      const chained = await findPackFolders(root).catch((caught: unknown) => caught);
      expect(isPackManifestError(chained) && chained.code).toBe('ERR_PACK_SEARCH_SYMLINK');
      expect((chained as Error).message).toContain(join(root, 'linked'));

      // Links that lead to no pack (and a loop back to a link's own folder) are still skipped.
      rmSync(join(further, 'deep'), { recursive: true });
      symlinkSync(outside, join(outside, 'loop'));
      expect(await findPackFolders(root)).toEqual([real]);
    } finally {
      rmSync(outside, { recursive: true, force: true });
      rmSync(further, { recursive: true, force: true });
    }
  });

  it('refuses more packs than maxPacks instead of returning a shorter list', async () => {
    pack('a');
    pack('b');
    pack('c');
    const error = await findPackFolders(root, { maxPacks: 2 }).catch((e: unknown) => e);
    expect(isPackManifestError(error) && error.code).toBe('ERR_PACK_SEARCH_TOO_LARGE');
  });

  it('refuses a tree of more folders than maxFolders', async () => {
    for (let i = 0; i < 5; i += 1) mkdirSync(join(root, `empty-${i}`));
    const error = await findPackFolders(root, { maxFolders: 3 }).catch((e: unknown) => e);
    expect(isPackManifestError(error) && error.code).toBe('ERR_PACK_SEARCH_TOO_LARGE');
  });

  it('fails closed on a root it cannot read', async () => {
    const missing = await findPackFolders(join(root, 'nope')).catch((e: unknown) => e);
    expect(isPackManifestError(missing) && missing.code).toBe('ERR_MANIFEST_IO');
  });
});
