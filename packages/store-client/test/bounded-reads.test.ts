/**
 * Small files that someone else may have written (the state folder, a store, an archive, a pack
 * folder being built) are read bounded: no symlink followed where none is expected, no FIFO
 * waited on, nothing larger than the file can legitimately be. Each case below hung (a FIFO) or
 * read without bound (a large file, a link to one) before.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACK_SIGNATURE_MAX_BYTES } from '@packwarden/pack-signature';
import { describe, expect, it } from 'vitest';
import { SIGNATURE_FILE_MAX_BYTES } from '../src/artifact-checks.js';
import { readCachedIndex, writeCachedIndex } from '../src/cache.js';
import { openStore } from '../src/index.js';
import { acquireLock } from '../src/lock.js';
import { refuseDowngrade } from '../src/staging.js';
import { tempDir } from './helpers.js';

const mkfifo = (path: string) => execFileSync('mkfifo', [path]);

/** Settles within `ms`, or fails the test: a read that waits on a FIFO never settles. */
function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) =>
      setTimeout(() => reject(new Error(`still waiting after ${ms} ms`)), ms),
    ),
  ]);
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error as { code?: string; message: string },
  );

describe('current.txt in the state folder (refuseDowngrade)', () => {
  it('a version, a missing file: judged as before', async () => {
    const parent = await tempDir();
    await expect(refuseDowngrade(parent, 'demo', '1.0.0')).resolves.toBeUndefined();
    writeFileSync(join(parent, 'current.txt'), '1.2.0\n');
    await expect(refuseDowngrade(parent, 'demo', '1.3.0')).resolves.toBeUndefined();
    expect((await failure(refuseDowngrade(parent, 'demo', '1.1.0')))?.code).toBe(
      'ERR_DOWNGRADE_REFUSED',
    );
  });

  it('a symlink (even to a file naming a lower version), a FIFO, a huge file: refused, promptly', async () => {
    const parent = await tempDir();
    const elsewhere = join(await tempDir(), 'v');
    writeFileSync(elsewhere, '0.0.1\n');
    symlinkSync(elsewhere, join(parent, 'current.txt'));
    const viaLink = await within(5_000, failure(refuseDowngrade(parent, 'demo', '1.0.0')));
    expect(viaLink?.code).toBe('ERR_DOWNGRADE_REFUSED');
    expect(viaLink?.message).toContain('does not name a version');

    const fifoParent = await tempDir();
    mkfifo(join(fifoParent, 'current.txt'));
    const viaFifo = await within(5_000, failure(refuseDowngrade(fifoParent, 'demo', '1.0.0')));
    expect(viaFifo?.code).toBe('ERR_DOWNGRADE_REFUSED');

    const hugeParent = await tempDir();
    writeFileSync(join(hugeParent, 'current.txt'), `${' '.repeat(64 * 1024)}0.0.1\n`);
    const viaHuge = await failure(refuseDowngrade(hugeParent, 'demo', '1.0.0'));
    expect(viaHuge?.code).toBe('ERR_DOWNGRADE_REFUSED');
  });
});

describe('the store index named by a path', () => {
  it('a FIFO is refused at once (ERR_STORE_FETCH), a symlink to a real index is followed', async () => {
    const dir = await tempDir();
    mkfifo(join(dir, 'index.json'));
    const error = await within(5_000, failure(openStore({ url: dir, env: {}, cacheDir: false })));
    expect(error?.code).toBe('ERR_STORE_FETCH');
    expect(error?.message).toContain('not a regular file');

    const real = join(await tempDir(), 'real.json');
    writeFileSync(real, JSON.stringify({ version: 1, artifacts: [] }));
    const linked = join(await tempDir(), 'index.json');
    symlinkSync(real, linked);
    const store = await openStore({ url: linked, env: {}, cacheDir: false });
    expect(store.list()).toEqual([]);
  });
});

describe('the index cache', () => {
  it('an entry written here is read back; a FIFO, a symlink or an oversized file is a miss', async () => {
    const cacheDir = await tempDir();
    const cache = { dir: cacheDir, key: randomBytes(32) };
    const url = 'https://store.example/index.json';
    await writeCachedIndex(cache, { url, etag: '"1"', body: '{"version":1,"artifacts":[]}' });
    const hit = await readCachedIndex(cache, url);
    expect(hit.kind === 'hit' && hit.entry.etag).toBe('"1"');

    const [file] = execFileSync('find', [join(cacheDir, 'index'), '-type', 'f'], {
      encoding: 'utf8',
    })
      .trim()
      .split('\n');
    const entry = JSON.stringify({ url, etag: '"2"', body: '{}' });
    execFileSync('rm', [file!]);
    mkfifo(file!);
    expect((await within(5_000, readCachedIndex(cache, url))).kind).toBe('refused');

    execFileSync('rm', [file!]);
    const target = join(await tempDir(), 'entry.json');
    writeFileSync(target, entry);
    symlinkSync(target, file!);
    expect((await readCachedIndex(cache, url)).kind).toBe('refused');

    execFileSync('rm', [file!]);
    writeFileSync(file!, `${entry}${' '.repeat(17 * 1024 * 1024)}`);
    expect((await readCachedIndex(cache, url)).kind).toBe('refused');
  });
});

describe('the install lock', () => {
  it('a FIFO planted where the lock goes: judged as a lock someone holds, not waited on forever', async () => {
    const dir = await tempDir();
    mkdirSync(join(dir, 'agents'));
    const path = join(dir, 'agents', '.lock');
    mkfifo(path);
    const error = await within(
      10_000,
      failure(acquireLock(path, { timeoutMs: 300, staleMs: 60_000 })),
    );
    expect(error?.code).toBe('ERR_INSTALL_LOCKED');
  });
});

describe("an archive's signature file", () => {
  it("is bounded by pack-signature's limit on a token, plus its newline", () => {
    expect(SIGNATURE_FILE_MAX_BYTES).toBe(PACK_SIGNATURE_MAX_BYTES + 1);
  });
});
