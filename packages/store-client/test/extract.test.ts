import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { DEFAULT_EXTRACT_LIMITS, extractArchive, foldName, type StoreError } from '../src/index.js';
import { listTree, makeTar, makeTgz, tempDir } from './helpers.js';

describe('extractArchive', () => {
  it('normalises modes: setuid, setgid, sticky and world-write dropped; owner-exec gives 0755', async () => {
    const dir = await tempDir();
    const archive = await makeTgz([
      { name: 'suid', content: 'x', mode: 0o4777 },
      { name: 'sgid', content: 'x', mode: 0o2755 },
      { name: 'world', content: 'x', mode: 0o666 },
      { name: 'groupexec', content: 'x', mode: 0o654 },
      { name: 'd', type: 'directory', mode: 0o1777 },
      { name: 'd/f', content: 'x', mode: 0o100 },
    ]);
    await extractArchive(archive, join(dir, 'out'));
    const mode = async (p: string) => (await stat(join(dir, 'out', p))).mode & 0o7777;
    expect(await mode('suid')).toBe(0o755);
    expect(await mode('sgid')).toBe(0o755);
    expect(await mode('world')).toBe(0o644);
    expect(await mode('groupexec')).toBe(0o644);
    expect(await mode('d')).toBe(0o755);
    expect(await mode('d/f')).toBe(0o755);
    expect(await mode('.')).toBe(0o755);
  });

  it('takes one subfolder with stripPrefix and stripTopFolder, skipping links elsewhere', async () => {
    const dir = await tempDir();
    const archive = await makeTgz([
      { name: 'top/other/link', type: 'symlink', linkname: '/etc/passwd' },
      { name: 'top/packs/a/agent.yaml', content: 'a' },
      { name: 'top/packs/a/sub/x', content: 'x' },
      { name: 'top/packs/ab/agent.yaml', content: 'ab' },
    ]);
    const result = await extractArchive(archive, join(dir, 'out'), {
      stripTopFolder: true,
      stripPrefix: 'packs/a',
    });
    expect(result).toMatchObject({ files: 2, bytes: 2 });
    expect(await listTree(join(dir, 'out'))).toEqual(['agent.yaml', 'sub/', 'sub/x']);
    const mixed = await makeTgz([
      { name: 'top/a', content: 'a' },
      { name: 'other/b', content: 'b' },
    ]);
    const error = await extractArchive(mixed, join(dir, 'out2'), { stripTopFolder: true }).catch(
      (e: StoreError) => e,
    );
    expect((error as StoreError).code).toBe('ERR_ARCHIVE_PATH_UNSAFE');
  });

  it('is atomic: a refused archive leaves dest as it was and no staging folder; a non-empty dest needs force', async () => {
    const dir = await tempDir();
    const dest = join(dir, 'out');
    await mkdir(dest);
    await writeFile(join(dest, 'keep'), 'old');
    const good = await makeTgz([{ name: 'new', content: 'n' }]);
    expect(
      ((await extractArchive(good, dest).catch((e: StoreError) => e)) as StoreError).code,
    ).toBe('ERR_TARGET_NOT_EMPTY');
    const bad = await makeTgz([
      { name: 'new', content: 'n' },
      { name: '../escape', content: 'x' },
    ]);
    expect(
      ((await extractArchive(bad, dest, { force: true }).catch((e: StoreError) => e)) as StoreError)
        .code,
    ).toBe('ERR_ARCHIVE_PATH_UNSAFE');
    expect(await readdir(dir)).toEqual(['out']);
    expect(await readFile(join(dest, 'keep'), 'utf8')).toBe('old');
    await extractArchive(good, dest, { force: true });
    expect(await readdir(dest)).toEqual(['new']);
    expect(await readdir(dir)).toEqual(['out']);
  });

  it('applies limits: bytes across files, entries, depth, and the ratio after its grace', async () => {
    const dir = await tempDir();
    const three = await makeTgz([
      { name: 'a', content: Buffer.alloc(600) },
      { name: 'b', content: Buffer.alloc(600) },
    ]);
    const tooBig = await extractArchive(three, join(dir, 'o1'), {
      limits: { maxBytes: 1000 },
    }).catch((e: StoreError) => e);
    expect((tooBig as StoreError).code).toBe('ERR_ARCHIVE_TOO_LARGE');
    const tooMany = await extractArchive(three, join(dir, 'o2'), {
      limits: { maxEntries: 1 },
    }).catch((e: StoreError) => e);
    expect((tooMany as StoreError).code).toBe('ERR_ARCHIVE_TOO_MANY_ENTRIES');
    // 2 MiB of zeros compresses about 1000:1: fine under a 2000:1 limit, refused at 200:1.
    const zeros = gzipSync(await makeTar([{ name: 'z', content: Buffer.alloc(2 * 1024 * 1024) }]));
    expect(
      (await extractArchive(zeros, join(dir, 'o3'), { limits: { maxRatio: 2000 } })).bytes,
    ).toBe(2 * 1024 * 1024);
    expect(
      ((await extractArchive(zeros, join(dir, 'o4')).catch((e: StoreError) => e)) as StoreError)
        .code,
    ).toBe('ERR_ARCHIVE_RATIO');
    // Small archives that compress well are under the grace size and pass.
    expect(
      (
        await extractArchive(
          gzipSync(await makeTar([{ name: 'z', content: Buffer.alloc(100_000) }])),
          join(dir, 'o5'),
        )
      ).files,
    ).toBe(1);
    expect(DEFAULT_EXTRACT_LIMITS).toMatchObject({
      maxEntries: 20_000,
      maxBytes: 512 * 1024 * 1024,
      maxRatio: 200,
    });
    expect(
      (
        (await extractArchive(three, join(dir, 'o6'), { limits: { maxBytes: -1 } }).catch(
          (e: StoreError) => e,
        )) as StoreError
      ).code,
    ).toBe('ERR_INVALID_ARGUMENT');
  });

  it('accepts PAX and GNU long names that stay inside, judged by the final path', async () => {
    const dir = await tempDir();
    const long = `${'folder/'.repeat(20)}${'n'.repeat(150)}`;
    await extractArchive(await makeTgz([{ name: long, content: 'deep' }]), join(dir, 'out'));
    expect(await readFile(join(dir, 'out', long), 'utf8')).toBe('deep');
  });

  it('folds names the way case-insensitive and normalising filesystems do', () => {
    expect(foldName('Straße')).toBe(foldName('STRASSE'));
    expect(foldName('STRAẞE')).toBe(foldName('strasse'));
    expect(foldName('caf\u00e9')).toBe(foldName('CAFE\u0301'));
    expect(foldName('ﬀ')).toBe(foldName('FF'));
    expect(foldName('a')).not.toBe(foldName('b'));
  });
});
