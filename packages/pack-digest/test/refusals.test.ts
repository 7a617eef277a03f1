import { execFileSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import {
  computePackDigest,
  PackDigestError,
  type PackDigestErrorCode,
} from '@packwarden/pack-digest';
import { hashRegularFileSync } from '../src/hash-file.js';
import { makeTree, removeTree } from './tree.js';

const roots: string[] = [];
afterEach(() => roots.splice(0).forEach(removeTree));

function tree(files: Parameters<typeof makeTree>[0] = []): string {
  const root = makeTree(files);
  roots.push(root);
  return root;
}

async function refusal(
  root: string,
  options: Parameters<typeof computePackDigest>[1] = {},
): Promise<PackDigestError> {
  const error = await computePackDigest(root, options).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(PackDigestError);
  return error as PackDigestError;
}

async function expectRefusal(root: string, code: PackDigestErrorCode, path?: string, options = {}) {
  const error = await refusal(root, options);
  expect(error.code).toBe(code);
  if (path !== undefined) {
    expect(error.path).toBe(path);
    // Paths are quoted (JSON) in messages where they may hold characters a terminal acts on.
    expect([path, JSON.stringify(path)].some((shown) => error.message.includes(shown))).toBe(true);
  }
  return error;
}

describe('refusals (spec rule 3), each naming the path', () => {
  test('a FIFO', async () => {
    const root = tree([{ path: 'agent.yaml', content: 'x' }]);
    mkdirSync(join(root, 'skills'));
    execFileSync('mkfifo', [join(root, 'skills', 'pipe')]);
    const error = await expectRefusal(root, 'ERR_DIGEST_UNSUPPORTED_TYPE', 'skills/pipe');
    expect(error.fileType).toBe('fifo');
  });

  test('a unix socket', async () => {
    const root = tree([{ path: 'a', content: 'x' }]);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(join(root, 'sock'), resolve));
    try {
      const error = await expectRefusal(root, 'ERR_DIGEST_UNSUPPORTED_TYPE', 'sock');
      expect(error.fileType).toBe('socket');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test('character and block devices', async () => {
    const root = tree([{ path: 'a', content: 'x' }]);
    let made = true;
    try {
      execFileSync('mknod', [join(root, 'null'), 'c', '1', '3'], { stdio: 'ignore' });
    } catch {
      made = false; // not root: fall back to the system's own device folder below
    }
    if (made) {
      const error = await expectRefusal(root, 'ERR_DIGEST_UNSUPPORTED_TYPE', 'null');
      expect(error.fileType).toBe('character-device');
      const blockRoot = tree([]);
      execFileSync('mknod', [join(blockRoot, 'disk'), 'b', '7', '200']);
      expect((await expectRefusal(blockRoot, 'ERR_DIGEST_UNSUPPORTED_TYPE', 'disk')).fileType).toBe(
        'block-device',
      );
    } else {
      const error = await expectRefusal('/dev', 'ERR_DIGEST_UNSUPPORTED_TYPE');
      expect(['character-device', 'block-device', 'socket', 'fifo']).toContain(error.fileType);
    }
  });

  test('a name that is not valid UTF-8', async () => {
    const root = tree([{ path: 'ok.md', content: 'x' }]);
    mkdirSync(join(root, 'skills'));
    writeFileSync(
      Buffer.concat([Buffer.from(join(root, 'skills') + '/'), Buffer.from([0x66, 0xff, 0x6f])]),
      'x',
    );
    const error = await expectRefusal(root, 'ERR_DIGEST_INVALID_UTF8_NAME');
    expect(error.path).toMatch(/^skills\/f/);
  });

  test('an overlong UTF-8 encoding and an encoded surrogate are not valid UTF-8 either', async () => {
    for (const bytes of [
      [0xc0, 0xaf],
      [0xed, 0xa0, 0x80],
    ]) {
      const root = tree([]);
      writeFileSync(Buffer.concat([Buffer.from(root + '/'), Buffer.from(bytes)]), 'x');
      await expectRefusal(root, 'ERR_DIGEST_INVALID_UTF8_NAME');
    }
  });

  test.each([
    ['newline', 'evil\nname'],
    ['escape', 'ansi\u001b[31m'],
    ['tab', 'a\tb'],
    ['DEL', 'del\u007f'],
  ])('a control character (%s) in a name', async (_label, name) => {
    const root = tree([{ path: `dir/${name}`, content: 'x' }]);
    await expectRefusal(root, 'ERR_DIGEST_CONTROL_CHARACTER', `dir/${name}`);
  });

  test('a control character in a folder name', async () => {
    const root = tree([{ path: 'bad\u0001dir/file', content: 'x' }]);
    await expectRefusal(root, 'ERR_DIGEST_CONTROL_CHARACTER', 'bad\u0001dir');
  });

  test('two file names equal after NFC', async () => {
    const root = tree([
      { path: 'caf\u00e9.md', content: 'composed' },
      { path: 'cafe\u0301.md', content: 'decomposed' },
    ]);
    const error = await expectRefusal(root, 'ERR_DIGEST_NFC_COLLISION', 'caf\u00e9.md');
    expect(error.message).toContain('NFC');
  });

  test('two folder names equal after NFC, even with different files inside', async () => {
    const root = tree([
      { path: '\u00c5/a.md', content: '1' },
      { path: 'A\u030a/b.md', content: '2' },
    ]);
    await expectRefusal(root, 'ERR_DIGEST_NFC_COLLISION', '\u00c5');
  });
});

describe('bounds and other failures', () => {
  test('more entries than maxEntries', async () => {
    const root = tree(Array.from({ length: 11 }, (_, i) => ({ path: `f${i}`, content: '' })));
    await expectRefusal(root, 'ERR_DIGEST_TOO_MANY_ENTRIES', undefined, {
      limits: { maxEntries: 10 },
    });
    expect((await computePackDigest(root, { limits: { maxEntries: 11 } })).entries).toHaveLength(
      11,
    );
  });

  test('folders nested deeper than maxDepth', async () => {
    const deep = Array.from({ length: 6 }, (_, i) => `d${i}`).join('/');
    const root = tree([{ path: `${deep}/f`, content: '' }]);
    await expectRefusal(root, 'ERR_DIGEST_TOO_DEEP', 'd0/d1/d2/d3/d4/d5', {
      limits: { maxDepth: 5 },
    });
    expect((await computePackDigest(root, { limits: { maxDepth: 6 } })).entries).toHaveLength(1);
  });

  test('a path longer than maxPathBytes (counted in UTF-8 bytes)', async () => {
    const root = tree([{ path: `${'技'.repeat(30)}`, content: '' }]); // 90 bytes, 30 UTF-16 units
    await expectRefusal(root, 'ERR_DIGEST_PATH_TOO_LONG', undefined, {
      limits: { maxPathBytes: 89 },
    });
    expect((await computePackDigest(root, { limits: { maxPathBytes: 90 } })).entries).toHaveLength(
      1,
    );
  });

  test('a missing root, and a root that is a file', async () => {
    await expectRefusal(join(tmpdir(), 'pw-no-such-pack-really'), 'ERR_DIGEST_ROOT_NOT_FOUND');
    const root = tree([{ path: 'file', content: 'x' }]);
    await expectRefusal(join(root, 'file'), 'ERR_DIGEST_ROOT_NOT_DIRECTORY');
  });

  test('a file swapped for a symlink, FIFO or folder after the walk is refused, never followed or waited on', () => {
    const root = tree([{ path: 'real', content: 'secret' }]);
    symlinkSync(join(root, 'real'), join(root, 'link'));
    execFileSync('mkfifo', [join(root, 'fifo')]);
    mkdirSync(join(root, 'dir'));
    const buffer = Buffer.alloc(64);
    for (const name of ['link', 'fifo', 'dir']) {
      const result = hashRegularFileSync(fs, crypto, join(root, name), buffer);
      expect(result).toMatchObject({ ok: false, reason: 'changed' });
    }
    expect(hashRegularFileSync(fs, crypto, join(root, 'real'), buffer)).toMatchObject({
      ok: true,
      size: 6,
    });
  });

  test('an aborted signal stops the work with ERR_DIGEST_ABORTED', async () => {
    const root = tree(Array.from({ length: 50 }, (_, i) => ({ path: `f${i}`, content: 'x' })));
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await expectRefusal(root, 'ERR_DIGEST_ABORTED', undefined, { signal: controller.signal });
    await expectRefusal(root, 'ERR_DIGEST_ABORTED', undefined, {
      signal: controller.signal,
      parallel: 'always',
      threads: 2,
    });
  });
});

describe('what is and is not followed', () => {
  test('a symlinked root is resolved first; symlinks below are never followed', async () => {
    const target = tree([
      { path: 'agent.yaml', content: 'x' },
      { path: 'loop', symlink: '.' },
      { path: 'escape', symlink: '/etc' },
    ]);
    const parent = mkdtempSync(join(tmpdir(), 'pw-link-'));
    roots.push(parent);
    symlinkSync(target, join(parent, 'pack'));
    const viaLink = await computePackDigest(join(parent, 'pack'));
    const direct = await computePackDigest(target);
    expect(viaLink.digest).toBe(direct.digest);
    expect(direct.entries.map((entry) => `${entry.mode} ${entry.path}`)).toEqual([
      'f agent.yaml',
      'l escape',
      'l loop',
    ]);
  });

  test('the root pack.sig is excluded whatever it is; any other change changes the digest', async () => {
    const root = tree([{ path: 'agent.yaml', content: 'x' }]);
    const before = (await computePackDigest(root)).digest;
    writeFileSync(join(root, 'pack.sig'), 'sig');
    expect((await computePackDigest(root)).digest).toBe(before);
    writeFileSync(join(root, 'PACK.SIG'), 'sig');
    expect((await computePackDigest(root)).digest).not.toBe(before);
  });

  test('a non-executable mode change other than owner-execute does not count; owner-execute does', async () => {
    const root = tree([{ path: 'run.sh', content: '#!/bin/sh\n' }]);
    const plain = (await computePackDigest(root)).digest;
    execFileSync('chmod', ['0604', join(root, 'run.sh')]);
    expect((await computePackDigest(root)).digest).toBe(plain);
    execFileSync('chmod', ['0744', join(root, 'run.sh')]);
    const exec = await computePackDigest(root);
    expect(exec.digest).not.toBe(plain);
    expect(exec.entries[0]!.mode).toBe('x');
  });
});
