import { execFileSync } from 'node:child_process';
import {
  Dirent,
  existsSync,
  lstatSync,
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
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  isAtomicWriteTemporary,
  readBoundedFile,
  removeStaleTemporaries,
  typedEntry,
  writeFileAtomic,
} from '@packwarden/pack-manifest/fs';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'pw-fs-'));
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

const temporaries = (dir: string): string[] =>
  readdirSync(dir).filter((name) => name.endsWith('.tmp'));

async function withUmask<T>(mask: number, work: () => Promise<T>): Promise<T> {
  const previous = process.umask(mask);
  try {
    return await work();
  } finally {
    process.umask(previous);
  }
}

describe('writeFileAtomic', () => {
  it('writes text and bytes, replacing what was there, and leaves no temporary file', async () => {
    const file = join(root, 'current.txt');
    await writeFileAtomic(file, '1.0.0\n', { mode: 0o644 });
    expect(readFileSync(file, 'utf8')).toBe('1.0.0\n');
    await writeFileAtomic(file, Uint8Array.from([0, 255, 10]), { mode: 0o644, syncFolder: true });
    expect([...readFileSync(file)]).toEqual([0, 255, 10]);
    expect(readdirSync(root)).toEqual(['current.txt']);
  });

  it('replaces a symlink at the path instead of writing through it', async () => {
    const victim = join(root, 'victim.txt');
    writeFileSync(victim, 'do not overwrite\n');
    const file = join(root, 'pack.sig');
    symlinkSync(victim, file);
    await writeFileAtomic(file, 'token\n', { mode: 0o644 });
    expect(readFileSync(victim, 'utf8')).toBe('do not overwrite\n');
    expect(lstatSync(file).isFile()).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe('token\n');
  });

  it('on a failed rename throws the OS error and leaves no temporary file, the target untouched', async () => {
    // A non-empty folder cannot be replaced by rename().
    const file = join(root, 'lock.json');
    mkdirSync(file);
    writeFileSync(join(file, 'keep'), 'x');
    await expect(writeFileAtomic(file, '{}', { mode: 0o644, syncFolder: true })).rejects.toThrow(
      /EISDIR|ENOTEMPTY|EEXIST/,
    );
    expect(temporaries(root)).toEqual([]);
    expect(readdirSync(file)).toEqual(['keep']);
  });

  it('in a folder that does not exist throws ENOENT and creates nothing', async () => {
    const file = join(root, 'missing', 'index.json');
    await expect(writeFileAtomic(file, '{}', { mode: 0o644 })).rejects.toMatchObject({
      code: 'ENOENT',
    });
    expect(readdirSync(root)).toEqual([]);
  });

  it.each([
    [0o077, 0o644],
    [0o077, 0o600],
    [0o022, 0o666],
    [0o022, 0o600],
  ])('under umask %o the file is exactly mode %o', async (mask, mode) => {
    const file = join(root, 'file');
    await withUmask(mask, () => writeFileAtomic(file, 'x', { mode }));
    expect(statSync(file).mode & 0o777).toBe(mode);
  });

  it('gives a replaced file the new mode, not the old one', async () => {
    const file = join(root, 'key.pem');
    await writeFileAtomic(file, 'public', { mode: 0o644 });
    await writeFileAtomic(file, 'private', { mode: 0o600 });
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });
});

describe('temporary files', () => {
  it('isAtomicWriteTemporary matches `.<name>.<pid>.<12 hex>.tmp` and nothing else', () => {
    expect(isAtomicWriteTemporary('.current.txt.123.0123456789ab.tmp', 'current.txt')).toBe(true);
    expect(isAtomicWriteTemporary('.currentxtxt.123.0123456789ab.tmp', 'current.txt')).toBe(false);
    expect(isAtomicWriteTemporary('current.txt.tmp-0123456789ab', 'current.txt')).toBe(false);
    expect(isAtomicWriteTemporary('.current.txt.12.notatemp.tmp', 'current.txt')).toBe(false);
    expect(isAtomicWriteTemporary('.pack.sig.123.0123456789ab.tmp', 'current.txt')).toBe(false);
  });

  it('removeStaleTemporaries removes a dead writer’s file, reports a live one, keeps look-alikes', async () => {
    // A pid that cannot be running: above the largest pid Linux hands out.
    const dead = join(root, '.pack.sig.4194399.0123456789ab.tmp');
    const live = join(root, `.pack.sig.${process.pid}.0123456789ab.tmp`);
    const lookalike = join(root, '.pack.sig.12.notatemp.tmp');
    const other = join(root, '.engine.sig.4194399.0123456789ab.tmp');
    for (const file of [dead, live, lookalike, other]) writeFileSync(file, 'x');
    expect(await removeStaleTemporaries(root, 'pack.sig')).toEqual([live]);
    expect([dead, live, lookalike, other].map((file) => existsSync(file))).toEqual([
      false,
      true,
      true,
      true,
    ]);
  });
});

describe('readBoundedFile', () => {
  it('reads a regular file up to and including the bound, with fstat of what it read', () => {
    const file = join(root, 'agent.yaml');
    writeFileSync(file, 'abcd', { mode: 0o640 });
    const read = readBoundedFile(file, 4);
    expect(read.kind).toBe('read');
    if (read.kind !== 'read') return;
    expect(read.bytes.toString()).toBe('abcd');
    expect(read.stats.mode & 0o777).toBe(0o640);
  });

  it('refuses a file larger than the bound from its size', () => {
    const file = join(root, 'pack.sig');
    writeFileSync(file, 'abcde');
    expect(readBoundedFile(file, 4)).toMatchObject({ kind: 'too-large', size: 5 });
  });

  it('says absent for a missing file, failed for a path through a file', () => {
    expect(readBoundedFile(join(root, 'none'), 10)).toMatchObject({
      kind: 'absent',
      cause: { code: 'ENOENT' },
    });
    writeFileSync(join(root, 'file'), 'x');
    expect(readBoundedFile(join(root, 'file', 'inner'), 10)).toMatchObject({
      kind: 'failed',
      step: 'open',
      cause: { code: 'ENOTDIR' },
    });
  });

  it('never follows a symlink unless asked; a loop is a failure even then', () => {
    const target = join(root, 'secret');
    writeFileSync(target, 'outside the pack');
    const link = join(root, 'pack.sig');
    symlinkSync(target, link);
    expect(readBoundedFile(link, 100)).toMatchObject({ kind: 'symlink', cause: { code: 'ELOOP' } });
    const followed = readBoundedFile(link, 100, { followSymlinks: true });
    expect(followed.kind === 'read' && followed.bytes.toString()).toBe('outside the pack');
    symlinkSync(join(root, 'loop'), join(root, 'loop'));
    expect(readBoundedFile(join(root, 'loop'), 100, { followSymlinks: true })).toMatchObject({
      kind: 'failed',
      step: 'open',
      cause: { code: 'ELOOP' },
    });
  });

  it('refuses a FIFO without blocking on it, and a folder', () => {
    const fifo = join(root, 'pack.sig');
    execFileSync('mkfifo', [fifo]);
    expect(readBoundedFile(fifo, 100).kind).toBe('not-regular-file');
    expect(readBoundedFile(fifo, 100, { followSymlinks: true }).kind).toBe('not-regular-file');
    expect(readBoundedFile(root, 100).kind).toBe('not-regular-file');
  });

  it('refuses a file that returns more bytes than fstat said (grew)', () => {
    // /proc files say size 0 and then return content: exactly a file that grew after fstat.
    const read = readBoundedFile('/proc/self/status', 1024 * 1024);
    expect(read).toMatchObject({ kind: 'grew' });
    expect(read.kind === 'grew' && read.stats.size).toBe(0);
  });

  it('refuses a file that returns fewer bytes than fstat said (shrank), never a prefix', () => {
    // sysfs files say 4096 bytes and return a few: exactly a file cut short after fstat.
    const read = readBoundedFile('/sys/devices/system/cpu/online', 1024 * 1024);
    expect(read).toMatchObject({
      kind: 'failed',
      step: 'read',
      cause: {
        code: 'ERR_FILE_SHRANK',
        message: expect.stringMatching(/returned \d+ of the 4096 bytes/),
      },
    });
  });
});

describe('typedEntry', () => {
  const kinds = (entry: ReturnType<typeof typedEntry>) =>
    [
      entry.isFile(),
      entry.isDirectory(),
      entry.isSymbolicLink(),
      entry.isFIFO(),
      entry.isSocket(),
      entry.isBlockDevice(),
      entry.isCharacterDevice(),
    ]
      .map(Number)
      .join('');

  it('answers for an entry readdir gave no type (DT_UNKNOWN) what lstat says, a typed one as it is', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pw-typed-'));
    try {
      writeFileSync(join(dir, 'file'), 'x');
      mkdirSync(join(dir, 'folder'));
      symlinkSync('folder', join(dir, 'link'));
      execFileSync('mkfifo', [join(dir, 'fifo')]);
      type DirentConstructor = new (name: string, type: number, path: string) => Dirent;
      for (const dirent of readdirSync(dir, { withFileTypes: true })) {
        expect(typedEntry(dir, dirent)).toBe(dirent);
        const unknown = new (Dirent as never as DirentConstructor)(dirent.name, 0, dir);
        expect(kinds(unknown)).toBe('0000000');
        const typed = typedEntry(dir, unknown);
        expect(typed.name).toBe(dirent.name);
        expect(kinds(typed), dirent.name).toBe(kinds(dirent));
      }
      const gone = new (Dirent as never as DirentConstructor)('gone', 0, dir);
      expect(() => typedEntry(dir, gone)).toThrow(expect.objectContaining({ code: 'ENOENT' }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
