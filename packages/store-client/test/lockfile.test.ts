import { execFileSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import {
  assertLockEntryMatches,
  LOCKFILE_LIMITS,
  parseLockfile,
  readLockfile,
  writeLockfile,
  type LockEntry,
} from '../src/index.js';

const temps: string[] = [];
afterEach(() => temps.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));
function temp(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pw-lock-'));
  temps.push(dir);
  return dir;
}

const entry: LockEntry = {
  version: '1.0.0',
  source: 'oci://127.0.0.1:5000/packs/hello',
  resolved: `oci://127.0.0.1:5000/packs/hello@sha256:${'1'.repeat(64)}`,
  archiveSha256: '2'.repeat(64),
  packDigest: '3'.repeat(64),
  signer: null,
};

function code(work: () => unknown): string | undefined {
  try {
    work();
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}

describe('lockfile', () => {
  test('written atomically with sorted keys and fixed field order; reads back equal', async () => {
    const dir = temp();
    const file = join(dir, 'packwarden.lock');
    const shuffled = {
      signer: 'release-1',
      packDigest: entry.packDigest,
      archiveSha256: entry.archiveSha256,
      resolved: entry.resolved,
      source: entry.source,
      version: entry.version,
    };
    await writeLockfile(file, {
      lockfileVersion: 1,
      packs: { 'pack/zeta': entry, 'pack/alpha': shuffled },
    });
    const text = readFileSync(file, 'utf8');
    expect(text.indexOf('pack/alpha')).toBeLessThan(text.indexOf('pack/zeta'));
    expect(Object.keys(JSON.parse(text).packs['pack/alpha'])).toEqual([
      'version',
      'source',
      'resolved',
      'archiveSha256',
      'packDigest',
      'signer',
    ]);
    expect(readdirSync(dir)).toEqual(['packwarden.lock']);
    const back = await readLockfile(file);
    expect(back?.packs['pack/zeta']).toEqual(entry);
    expect(await readLockfile(join(dir, 'absent.lock'))).toBeUndefined();
  });

  test('malformed documents are refused with ERR_LOCKFILE_INVALID', () => {
    const good = { lockfileVersion: 1, packs: { 'pack/hello': entry } };
    expect(parseLockfile(JSON.stringify(good)).packs['pack/hello']).toEqual(entry);
    const bad: unknown[] = [
      { ...good, lockfileVersion: 2 },
      { ...good, extra: true },
      { lockfileVersion: 1, packs: { 'pack/../x': entry } },
      { lockfileVersion: 1, packs: { 'pack/hello': { ...entry, packDigest: 'zz' } } },
      { lockfileVersion: 1, packs: { 'pack/hello': { ...entry, signer: 5 } } },
      { lockfileVersion: 1, packs: { 'pack/hello': { ...entry, more: 1 } } },
      // An OCI entry's manifest in another repository, or no digest-pinned manifest at all.
      ...[
        `oci://127.0.0.1:5000/packs/other@sha256:${'1'.repeat(64)}`,
        `oci://127.0.0.1:5000/packs/hello-x@sha256:${'1'.repeat(64)}`,
        `oci://127.0.0.1:5000/packs/hello:1.0.0`,
        `oci://127.0.0.1:5000/packs/hello@sha256:${'1'.repeat(63)}`,
        `https://127.0.0.1:5000/packs/hello@sha256:${'1'.repeat(64)}`,
      ].map((resolved) => ({
        lockfileVersion: 1,
        packs: { 'pack/hello': { ...entry, resolved } },
      })),
      {
        lockfileVersion: 1,
        packs: { 'pack/hello': { ...entry, source: 'https://example.com/index.json' } },
      },
    ];
    for (const document of bad)
      expect(code(() => parseLockfile(JSON.stringify(document)))).toBe('ERR_LOCKFILE_INVALID');
    // Duplicate keys: strict JSON refuses, so an entry cannot be shadowed.
    expect(
      code(() =>
        parseLockfile(
          `{"lockfileVersion":1,"packs":{"pack/a":${JSON.stringify(entry)},"pack/a":${JSON.stringify(entry)}}}`,
        ),
      ),
    ).toBe('ERR_LOCKFILE_INVALID');
  });

  test('a lockfile over its size bound is refused before it is parsed', async () => {
    const file = join(temp(), 'huge.lock');
    writeFileSync(file, ' '.repeat(LOCKFILE_LIMITS.maxBytes + 1));
    await expect(readLockfile(file)).rejects.toMatchObject({ code: 'ERR_LOCKFILE_INVALID' });
  });

  test('a FIFO is refused without waiting for a writer; a symlink the user made is followed', async () => {
    const dir = temp();
    const fifo = join(dir, 'fifo.lock');
    execFileSync('mkfifo', [fifo]);
    await expect(readLockfile(fifo)).rejects.toMatchObject({ code: 'ERR_LOCKFILE_INVALID' });
    const real = join(dir, 'real.lock');
    await writeLockfile(real, { lockfileVersion: 1, packs: { 'pack/hello': entry } });
    symlinkSync(real, join(dir, 'link.lock'));
    expect((await readLockfile(join(dir, 'link.lock')))?.packs['pack/hello']).toEqual(entry);
  });

  test('written mode 0644 whatever the umask; a failed write is ERR_LOCKFILE_IO and leaves nothing', async () => {
    const dir = temp();
    const file = join(dir, 'packwarden.lock');
    const previous = process.umask(0o077);
    try {
      await writeLockfile(file, { lockfileVersion: 1, packs: {} });
    } finally {
      process.umask(previous);
    }
    expect(statSync(file).mode & 0o777).toBe(0o644);
    const blocked = join(dir, 'blocked.lock');
    mkdirSync(join(blocked, 'inside'), { recursive: true });
    await expect(writeLockfile(blocked, { lockfileVersion: 1, packs: {} })).rejects.toMatchObject({
      code: 'ERR_LOCKFILE_IO',
    });
    expect(readdirSync(dir).sort()).toEqual(['blocked.lock', 'packwarden.lock']);
  });

  test('a differing digest is ERR_LOCK_MISMATCH naming the entry, old and new', () => {
    expect(() =>
      assertLockEntryMatches('pack/hello', entry, { packDigest: entry.packDigest }),
    ).not.toThrow();
    let error: { code?: string; message?: string } = {};
    try {
      assertLockEntryMatches('pack/hello', entry, { packDigest: '4'.repeat(64) });
    } catch (caught) {
      error = caught as typeof error;
    }
    expect(error.code).toBe('ERR_LOCK_MISMATCH');
    expect(error.message).toContain('pack/hello@1.0.0');
    expect(error.message).toContain('4'.repeat(64));
    expect(error.message).toContain('3'.repeat(64));
  });

  test('an artifact that is another pack or another version is ERR_LOCK_MISMATCH', () => {
    expect(() =>
      assertLockEntryMatches('pack/hello', entry, { name: 'hello', version: '1.0.0' }),
    ).not.toThrow();
    expect(code(() => assertLockEntryMatches('pack/hello', entry, { name: 'other' }))).toBe(
      'ERR_LOCK_MISMATCH',
    );
    expect(code(() => assertLockEntryMatches('pack/hello', entry, { version: '9.9.9' }))).toBe(
      'ERR_LOCK_MISMATCH',
    );
  });
});
