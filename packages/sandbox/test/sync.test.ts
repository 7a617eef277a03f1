import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { computePackDigest } from '@packwarden/pack-digest';
import { SandboxError, copyPackTree, replaceWithCopy } from '../src/index.js';
import { SYNC_COPY_MAX_BYTES } from '../src/pack-copy.js';
import { agentYaml, boot, cleanTemps, tempDir, writeTree } from './helpers.js';

afterEach(cleanTemps);

function examplePack(root: string, name = 'victim'): string {
  return writeTree(join(root, name), {
    'agent.yaml': agentYaml(name, '  engine: exec\n  exec: {command: [./run.sh]}\n'),
    'run.sh': '#!/bin/sh\nexit 0\n',
    'AGENTS.md': 'be nice\n',
  });
}

async function refusal(promise: Promise<unknown>): Promise<SandboxError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(SandboxError);
  return error as SandboxError;
}

/** A folder outside the workspace holding one precious file, and its listing. */
function outsideFolder() {
  const outside = join(tempDir(), 'outside');
  writeTree(outside, { 'precious.txt': 'keep me', 'agents/victim/keep.txt': 'mine' });
  const snapshot = () =>
    readdirSync(outside, { recursive: true, encoding: 'utf8' }).sort().join('\n');
  return { outside, before: snapshot(), snapshot };
}

describe('sync never traverses a symlink it did not create (docs/sandbox.md)', () => {
  test.each([
    ['.packwarden -> outside', ['.packwarden'], ''],
    ['.packwarden/agents -> outside', ['.packwarden', 'agents'], ''],
    ['.packwarden/agents/<name> -> outside', ['.packwarden', 'agents', 'victim'], ''],
  ])(
    'a workspace holding %s refuses boot; the outside folder is untouched',
    async (_label, link) => {
      const pack = examplePack(tempDir());
      const workspace = tempDir();
      const { outside, before, snapshot } = outsideFolder();
      mkdirSync(join(workspace, ...link.slice(0, -1)), { recursive: true });
      symlinkSync(outside, join(workspace, ...link));

      const error = await refusal(boot(pack, { workspace }));
      expect(error.code).toBe('ERR_UNSAFE_PATH');
      expect(snapshot()).toBe(before);
      expect(readFileSync(join(outside, 'precious.txt'), 'utf8')).toBe('keep me');
      expect(existsSync(join(outside, 'agent.yaml'))).toBe(false);
    },
  );

  test('a file where the sync folder should be is refused, not replaced', async () => {
    const pack = examplePack(tempDir());
    const workspace = tempDir();
    writeTree(workspace, { '.packwarden/agents/victim': 'a file' });
    expect((await refusal(boot(pack, { workspace }))).code).toBe('ERR_UNSAFE_PATH');
    expect(readFileSync(join(workspace, '.packwarden/agents/victim'), 'utf8')).toBe('a file');
  });

  test('a planted <state>/pack symlink under a required signature is refused before the copy', async () => {
    const pack = examplePack(tempDir());
    const stateDir = tempDir();
    const { outside, before, snapshot } = outsideFolder();
    symlinkSync(outside, join(stateDir, 'pack'));
    const error = await refusal(
      boot(pack, {
        stateDir,
        requireSigned: true,
        trustRoot: () => Promise.reject(new Error('never asked')),
      }),
    );
    expect(error.code).toBe('ERR_UNSAFE_PATH');
    expect(snapshot()).toBe(before);
  });

  test('an existing sync folder is replaced by a fresh copy, and symlinks in the pack stay links', async () => {
    const root = tempDir();
    const pack = examplePack(root);
    symlinkSync('AGENTS.md', join(pack, 'RULES.md'));
    const workspace = tempDir();
    writeTree(workspace, { '.packwarden/agents/victim/stale.txt': 'old' });
    await boot(pack, { workspace });
    const synced = join(workspace, '.packwarden', 'agents', 'victim');
    expect(existsSync(join(synced, 'stale.txt'))).toBe(false);
    expect(readFileSync(join(synced, 'AGENTS.md'), 'utf8')).toBe('be nice\n');
    expect(execFileSync('stat', ['-c', '%F', join(synced, 'RULES.md')], { encoding: 'utf8' })).toBe(
      'symbolic link\n',
    );
    expect(execFileSync('stat', ['-c', '%a', join(synced, 'run.sh')], { encoding: 'utf8' })).toBe(
      execFileSync('stat', ['-c', '%a', join(pack, 'run.sh')], { encoding: 'utf8' }),
    );
  });
});

describe('a workspace overlapping the pack is refused (docs/sandbox.md)', () => {
  test('the pack in <workspace>/.packwarden/agents/<name> (run <name> --workspace .): the pack is not emptied', async () => {
    const workspace = tempDir();
    const pack = examplePack(join(workspace, '.packwarden', 'agents'));
    const error = await refusal(boot(pack, { workspace }));
    expect(error.code).toBe('ERR_WORKSPACE_OVERLAPS_PACK');
    expect(readFileSync(join(pack, 'AGENTS.md'), 'utf8')).toBe('be nice\n');
  });

  test('the workspace is the pack (run ./p --workspace ./p): nothing is copied into the pack', async () => {
    const pack = examplePack(tempDir());
    const error = await refusal(boot(pack, { workspace: pack }));
    expect(error.code).toBe('ERR_WORKSPACE_OVERLAPS_PACK');
    expect(existsSync(join(pack, '.packwarden'))).toBe(false);
  });

  test('a pack elsewhere inside the workspace is fine (a pack folder in the repository you work in)', async () => {
    const workspace = tempDir();
    const pack = examplePack(join(workspace, 'packs'));
    const { booted } = await boot(pack, { workspace });
    expect(booted.manifest.metadata.name).toBe('victim');
    expect(existsSync(join(workspace, '.packwarden', 'agents', 'victim', 'AGENTS.md'))).toBe(true);
  });
});

describe('copyPackTree', () => {
  test('refuses a FIFO with ERR_PACK_COPY', async () => {
    const pack = examplePack(tempDir());
    execFileSync('mkfifo', [join(pack, 'pipe')]);
    const target = tempDir();
    const error = await refusal(copyPackTree(pack, target));
    expect(error.code).toBe('ERR_PACK_COPY');
  });

  test('copies bytes and permission bits: empty, small (synchronous) and large (streamed) files, links as links', async () => {
    const pack = examplePack(tempDir());
    const large = randomBytes(SYNC_COPY_MAX_BYTES + 12_345);
    writeFileSync(join(pack, 'large.bin'), large);
    writeFileSync(join(pack, 'exactly-the-limit.bin'), large.subarray(0, SYNC_COPY_MAX_BYTES));
    writeFileSync(join(pack, 'empty'), '');
    mkdirSync(join(pack, 'deep', 'er'), { recursive: true });
    writeFileSync(join(pack, 'deep', 'er', 'tool.sh'), '#!/bin/sh\n', { mode: 0o750 });
    chmodSync(join(pack, 'deep', 'er', 'tool.sh'), 0o750);
    symlinkSync('../AGENTS.md', join(pack, 'deep', 'link'));
    const target = tempDir();
    expect(await copyPackTree(pack, target)).toBe(10);
    const [from, to] = await Promise.all([computePackDigest(pack), computePackDigest(target)]);
    expect(to.digest).toBe(from.digest);
    expect(to.entries.map((entry) => [entry.path, entry.mode, entry.size])).toEqual(
      from.entries.map((entry) => [entry.path, entry.mode, entry.size]),
    );
    expect(readFileSync(join(target, 'large.bin')).equals(large)).toBe(true);
    expect(statSync(join(target, 'deep', 'er', 'tool.sh')).mode & 0o777).toBe(0o750);
    expect(lstatSync(join(target, 'deep', 'link')).isSymbolicLink()).toBe(true);
  });

  test('folders that hold no file or symlink are left out of the copy: they are not digest entries', async () => {
    const pack = examplePack(tempDir());
    mkdirSync(join(pack, 'skills', 'ghost'), { recursive: true });
    mkdirSync(join(pack, 'skills', 'real'), { recursive: true });
    writeFileSync(join(pack, 'skills', 'real', 'SKILL.md'), 'real\n');
    mkdirSync(join(pack, 'engines', 'x', 'y', 'z'), { recursive: true });
    mkdirSync(join(pack, 'linked', 'deep'), { recursive: true });
    symlinkSync('../../AGENTS.md', join(pack, 'linked', 'deep', 'prompt'));
    const target = tempDir();
    await copyPackTree(pack, target);
    expect(readdirSync(target).sort()).toEqual([
      'AGENTS.md',
      'agent.yaml',
      'linked',
      'run.sh',
      'skills',
    ]);
    expect(readdirSync(join(target, 'skills'))).toEqual(['real']);
    expect(readdirSync(join(target, 'linked', 'deep'))).toEqual(['prompt']);
    expect((await computePackDigest(target)).digest).toBe((await computePackDigest(pack)).digest);
  });

  test('a symlink to a FIFO is copied as a link: the FIFO is never opened', async () => {
    const pack = examplePack(tempDir());
    const fifo = join(tempDir(), 'fifo');
    execFileSync('mkfifo', [fifo]);
    symlinkSync(fifo, join(pack, 'looks-like-a-file'));
    const target = tempDir();
    // Copied as a link, never opened (opening the FIFO would wait for a writer forever).
    expect(await copyPackTree(pack, target)).toBe(4);
    expect(lstatSync(join(target, 'looks-like-a-file')).isSymbolicLink()).toBe(true);
  });

  test('a file that exists in the target already is refused (O_EXCL), not overwritten', async () => {
    const pack = examplePack(tempDir());
    const target = tempDir();
    writeFileSync(join(target, 'AGENTS.md'), 'planted\n');
    await expect(copyPackTree(pack, target)).rejects.toMatchObject({ code: 'EEXIST' });
    expect(readFileSync(join(target, 'AGENTS.md'), 'utf8')).toBe('planted\n');
  });

  test('replaceWithCopy refuses copying a folder into itself', async () => {
    const pack = examplePack(tempDir());
    const error = await refusal(replaceWithCopy(pack, pack, ['inner'], 'test'));
    expect(error.code).toBe('ERR_WORKSPACE_OVERLAPS_PACK');
    expect(existsSync(join(pack, 'inner'))).toBe(false);
  });
});
