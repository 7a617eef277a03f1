// The pack copy and the socket scan on a file system whose readdir gives no entry types
// (DT_UNKNOWN: NFS, FUSE, XFS without ftype). None can be mounted here, so readdirSync is the
// real one with each Dirent made again as Node makes it for DT_UNKNOWN (type 0).
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { computePackDigest } from '@packwarden/pack-digest';
import { copyPackTree } from '../src/index.js';
import { findSockets } from '../src/isolation/bwrap-args.js';
import { cleanTemps, tempDir, writeTree } from './helpers.js';

const untyped = vi.hoisted(() => ({ on: false, made: 0 }));
vi.mock('node:fs', async (actual) =>
  (await import('../../../scripts/untyped-dirents.js')).untypedFs(await actual(), untyped),
);

const servers: Server[] = [];
afterEach(async () => {
  untyped.on = false;
  await Promise.all(servers.splice(0).map((s) => new Promise((done) => s.close(done))));
  cleanTemps();
});

describe('without entry types from readdir', () => {
  test('the simulation gives entries that are nothing', async () => {
    const { readdirSync } = await import('node:fs');
    const dir = writeTree(tempDir(), { 'a/b': 'x' });
    untyped.on = true;
    const [entry] = readdirSync(dir, { withFileTypes: true });
    expect([entry?.name, entry?.isDirectory(), entry?.isFile()]).toEqual(['a', false, false]);
  });

  test('copyPackTree copies the pack as with types, not "not a file, folder or symlink"', async () => {
    const pack = writeTree(tempDir(), {
      'agent.yaml': 'apiVersion: agenthippo.ai/v1\n',
      'skills/greet/SKILL.md': 'hi\n',
      'AGENTS.md': 'prompt\n',
    });
    const { symlinkSync } = await import('node:fs');
    symlinkSync('../../AGENTS.md', join(pack, 'skills', 'greet', 'prompt'));
    const typedTarget = tempDir();
    const typedCount = await copyPackTree(pack, typedTarget);
    untyped.on = true;
    const target = tempDir();
    expect(await copyPackTree(pack, target)).toBe(typedCount);
    untyped.on = false;
    expect((await computePackDigest(target)).digest).toBe((await computePackDigest(pack)).digest);
  });

  test('findSockets still finds a unix socket in the workspace, and one a folder down', async () => {
    const workspace = tempDir();
    const { mkdirSync } = await import('node:fs');
    mkdirSync(join(workspace, 'sub'));
    for (const path of [join(workspace, 'agent.sock'), join(workspace, 'sub', 'x.sock')]) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((listening) => server.listen(path, listening));
    }
    const typed = findSockets([workspace]).sort();
    expect(typed).toEqual([join(workspace, 'agent.sock'), join(workspace, 'sub', 'x.sock')]);
    untyped.on = true;
    expect(findSockets([workspace]).sort()).toEqual(typed);
  });
});
