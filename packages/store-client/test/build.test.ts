import { createHash } from 'node:crypto';
import { readFile, symlink, utimes, chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  buildStaticStore,
  StaticStoreIndexSchema,
  staticStoreIndexJsonSchema,
} from '../src/index.js';
import { tempDir, writePack } from './helpers.js';

async function readTree(dir: string, files: string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const f of files)
    out[f] = createHash('sha256')
      .update(await readFile(join(dir, f)))
      .digest('hex');
  return out;
}

describe('buildStaticStore', () => {
  it('writes index.json and one .tar.gz per version, byte-identical when rebuilt', async () => {
    const root = await tempDir();
    const packs = join(root, 'packs');
    await writePack(join(packs, 'alpha', '1.0.0'), 'alpha', '1.0.0', {
      '!hooks/run.sh': '#!/bin/sh\n',
      '.claude/settings.json': '{}',
      'z/a/b.txt': 'b',
    });
    await writePack(join(packs, 'alpha', '1.1.0-beta.1'), 'alpha', '1.1.0-beta.1');
    await writePack(join(packs, 'alpha', '0.9.0'), 'alpha', '0.9.0');
    await writePack(join(packs, 'beta'), 'beta', '2.0.0');
    const first = await buildStaticStore(packs, { out: join(root, 'out1') });
    // Different mtimes, modes beyond 0644/0755 and a different output folder change nothing.
    await utimes(join(packs, 'alpha', '1.0.0', 'z/a/b.txt'), new Date(0), new Date(86_400_000));
    await chmod(join(packs, 'alpha', '1.0.0', 'hooks/run.sh'), 0o4775);
    const second = await buildStaticStore(packs, { out: join(root, 'out2') });
    expect(second.packs).toEqual(first.packs);
    const files = ['index.json', ...first.packs.map((p) => p.archive)];
    expect(files).toContain('packs/alpha/alpha-1.0.0.tar.gz');
    expect(await readTree(join(root, 'out2'), files)).toEqual(
      await readTree(join(root, 'out1'), files),
    );

    const index = JSON.parse(await readFile(first.indexFile, 'utf8'));
    expect(StaticStoreIndexSchema.parse(index)).toBeTruthy();
    expect(
      index.artifacts.map(
        (a: { slug: string; latestVersion: string }) => `${a.slug}@${a.latestVersion}`,
      ),
    ).toEqual(['alpha@1.0.0', 'beta@2.0.0']);
    expect(index.artifacts[0].versions.map((v: { version: string }) => v.version)).toEqual([
      '1.1.0-beta.1',
      '1.0.0',
      '0.9.0',
    ]);
    const alpha = first.packs.find((p) => p.slug === 'alpha' && p.version === '1.0.0')!;
    const bytes = await readFile(join(root, 'out1', alpha.archive));
    expect(bytes.length).toBe(alpha.size);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(alpha.sha256);
    // Sorted entries, fixed owners and times, normalised modes.
    const tar = gunzipSync(bytes);
    const headers: { name: string; mode: number; mtime: number; uid: number }[] = [];
    for (let off = 0; off + 512 <= tar.length;) {
      const block = tar.subarray(off, off + 512);
      if (block.every((b) => b === 0)) break;
      const size = parseInt(block.toString('latin1', 124, 136), 8);
      headers.push({
        name: block.toString('utf8', 0, 100).replace(/\0.*$/s, ''),
        mode: parseInt(block.toString('latin1', 100, 108), 8),
        mtime: parseInt(block.toString('latin1', 136, 148), 8),
        uid: parseInt(block.toString('latin1', 108, 116), 8),
      });
      off += 512 + Math.ceil(size / 512) * 512;
    }
    expect(headers.map((h) => h.name)).toEqual([
      '.claude/',
      '.claude/settings.json',
      'AGENTS.md',
      'agent.yaml',
      'hooks/',
      'hooks/run.sh',
      'z/',
      'z/a/',
      'z/a/b.txt',
    ]);
    expect(new Set(headers.map((h) => h.mtime))).toEqual(new Set([946_684_800]));
    expect(new Set(headers.map((h) => h.uid))).toEqual(new Set([0]));
    expect(headers.find((h) => h.name === 'hooks/run.sh')!.mode).toBe(0o755);
    expect(headers.find((h) => h.name === 'agent.yaml')!.mode).toBe(0o644);
    expect(bytes[9]).toBe(3);
  });

  it('writes absolute archive URLs with baseUrl, and carries pack.sig', async () => {
    const root = await tempDir();
    const dir = await writePack(join(root, 'p'), 'solo', '1.0.0');
    await writeFile(join(dir, 'pack.sig'), 'eyJhbGciOiJFUzI1NiJ9.e30.sig\n');
    const built = await buildStaticStore(dir, {
      out: join(root, 'out'),
      baseUrl: 'https://packs.example.com/store',
    });
    expect(built.packs[0]).toMatchObject({
      archive: 'https://packs.example.com/store/packs/solo/solo-1.0.0.tar.gz',
      signed: true,
    });
    const index = JSON.parse(await readFile(built.indexFile, 'utf8'));
    expect(index.artifacts[0].versions[0].signature).toBe('eyJhbGciOiJFUzI1NiJ9.e30.sig');
  });

  it('refuses symlinks, duplicate versions and folders without packs', async () => {
    const root = await tempDir();
    const packs = join(root, 'packs');
    const a = await writePack(join(packs, 'a'), 'a', '1.0.0');
    await symlink('AGENTS.md', join(a, 'link.md'));
    await expect(buildStaticStore(packs, { out: join(root, 'o') })).rejects.toMatchObject({
      code: 'ERR_BUILD_UNSUPPORTED_ENTRY',
    });
    const dup = join(root, 'dup');
    await writePack(join(dup, 'x'), 'same', '1.0.0');
    await writePack(join(dup, 'y'), 'same', '1.0.0');
    await expect(buildStaticStore(dup, { out: join(root, 'o2') })).rejects.toMatchObject({
      code: 'ERR_BUILD_DUPLICATE',
    });
    await expect(
      buildStaticStore(await tempDir(), { out: join(root, 'o3') }),
    ).rejects.toMatchObject({ code: 'ERR_BUILD_NO_PACKS' });
  });

  it('refuses a symlink to a pack folder, which it neither follows nor leaves out', async () => {
    // Followed, it would publish a folder from anywhere on the machine; left out, `pack verify
    // --all` over the same folder would not have seen the pack its path runs.
    const root = await tempDir();
    const packs = join(root, 'packs');
    await writePack(join(packs, 'a'), 'a', '1.0.0');
    const elsewhere = await writePack(join(root, 'elsewhere'), 'b', '1.0.0');
    await symlink(elsewhere, join(packs, 'b'));
    await expect(buildStaticStore(packs, { out: join(root, 'o') })).rejects.toMatchObject({
      code: 'ERR_BUILD_UNSUPPORTED_ENTRY',
      message: expect.stringContaining(`${join(packs, 'b')} is a symlink to a pack folder`),
    });
  });

  it('ships a JSON Schema for index.json', () => {
    const schema = staticStoreIndexJsonSchema();
    expect(schema.$schema).toMatch(/json-schema.org/);
    expect(JSON.stringify(schema)).toContain('packwarden-store/1');
    expect((schema.required as string[]).sort()).toEqual(['artifacts', 'format']);
  });
});
