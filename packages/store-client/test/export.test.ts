import { existsSync } from 'node:fs';
import { chmod, chown, cp, mkdir, readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { computePackDigest } from '@packwarden/pack-digest';
import { generateKeypair, signPack } from '@packwarden/pack-signature';
import { loadPackTrustRoot, selectTrustedKey } from '@packwarden/trust-root';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../../scripts/seeded-random.js';
import {
  buildStaticStore,
  extractArchive,
  exportPack,
  installPack,
  isStoreError,
  openPackArchive,
  pushPackFolder,
} from '../src/index.js';
import {
  listTree,
  makeTar,
  makeTgz,
  manifest,
  tempDir,
  writePack,
  type TarInput,
} from './helpers.js';

const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as { code: string; message: string },
  );

describe('exportPack (issue 12.1)', () => {
  it('the same bytes whatever the mtimes, modes, owners and umask, and the bytes a static store serves', async () => {
    const root = await tempDir();
    const a = await writePack(join(root, 'a', 'demo'), 'demo', '1.0.0', {
      '!bin/run.sh': '#!/bin/sh\necho hi\n',
      'skills/x/y.md': 'y',
    });
    const b = join(root, 'b', 'demo');
    await cp(a, b, { recursive: true });
    // Another copy of the same content: other times, looser and tighter modes, another owner.
    await utimes(join(b, 'AGENTS.md'), new Date(1_000_000), new Date(2_000_000));
    await chmod(join(b, 'AGENTS.md'), 0o600);
    await chmod(join(b, 'bin', 'run.sh'), 0o700);
    await chmod(join(b, 'skills'), 0o700);
    await chown(join(b, 'skills', 'x', 'y.md'), 4321, 4321).catch(() => undefined);
    const previous = process.umask(0o077);
    let first;
    try {
      first = await exportPack(a, { out: join(root, 'out', 'demo.tgz') });
    } finally {
      process.umask(previous);
    }
    const second = await exportPack(b);
    expect(second.archive.equals(first.archive)).toBe(true);
    expect(first).toMatchObject({ slug: 'demo', version: '1.0.0', signed: false });
    expect((await readFile(first.file!)).equals(first.archive)).toBe(true);
    expect(first.digest).toBe((await computePackDigest(a)).digest);
    const built = await buildStaticStore(join(root, 'a'), { out: join(root, 'store') });
    const served = await readFile(join(root, 'store', built.packs[0]!.archive));
    expect(served.equals(first.archive)).toBe(true);
    expect(built.packs[0]!.sha256).toBe(first.sha256);
  });

  it('refuses a folder without a valid agent.yaml, writing nothing', async () => {
    const root = await tempDir();
    await mkdir(join(root, 'empty'));
    const error = await failure(exportPack(join(root, 'empty'), { out: join(root, 'x.tgz') }));
    expect(error?.code).toBe('ERR_BUILD_PACK_INVALID');
    expect(await readdir(root)).toEqual(['empty']);
  });
});

describe('installPack from a local archive (openPackArchive, issue 12.1)', () => {
  async function signedExport() {
    const root = await tempDir();
    const key = await generateKeypair({ kid: 'release' });
    const dir = await writePack(join(root, 'demo'), 'demo', '1.2.0', { 'skills/a.md': 'a' });
    await signPack(dir, { privateKeyPem: key.privateKeyPem, kid: key.kid });
    const exported = await exportPack(dir, { out: join(root, 'demo.tgz') });
    const trustRoot = await loadPackTrustRoot({ keys: { release: key.publicKeyPem }, env: {} });
    return {
      root,
      dir,
      exported,
      file: exported.file!,
      home: join(root, 'home'),
      selectKey: (kid: string, at: Date) => selectTrustedKey(trustRoot, kid, { at }),
    };
  }

  it('installs what pack export wrote, signature verified, same digest as the folder', async () => {
    const { file, home, dir, selectKey } = await signedExport();
    const store = await openPackArchive(file, { env: {} });
    expect(store.kind).toBe('archive');
    expect(store.list().map((a) => `${a.slug}@${a.latestVersion}`)).toEqual(['demo@1.2.0']);
    const result = await installPack(
      store,
      { type: 'pack', slug: 'demo' },
      { home, requireSigned: true, selectKey },
    );
    expect(result.verification?.kind).toBe('verified');
    expect(result.dir).toBe(join(home, 'agents', 'demo', '1.2.0'));
    expect(result.digest).toBe((await computePackDigest(dir)).digest);
    expect(await readFile(join(home, 'agents', 'demo', 'current.txt'), 'utf8')).toBe('1.2.0\n');
    const flat = join(home, 'flat');
    await installPack(store, { type: 'pack', slug: 'demo' }, { to: flat, selectKey });
    expect(await listTree(flat)).toContain('skills/a.md');
  });

  it('the digest an install records is the walk of what it wrote, a root folder named pack.sig included', async () => {
    // Two implementations of Pack digest v1 meet here: the install hashes files as it writes
    // them, pack-digest walks the folder afterwards (pack verify --installed). The walk used to
    // leave out a root folder named pack.sig with its files, where the install counted them.
    const root = await tempDir();
    const file = join(root, 'odd.tgz');
    await writeFile(
      file,
      await makeTgz([
        { name: 'agent.yaml', content: manifest('odd', '1.0.0') },
        { name: 'pack.sig/', type: 'directory' },
        { name: 'pack.sig/hook.js', content: 'process.exit(0);\n', mode: 0o755 },
        { name: 'skills/web/pack.sig', content: 'a nested pack.sig is content\n' },
      ]),
    );
    const store = await openPackArchive(file, { env: {} });
    const result = await installPack(
      store,
      { type: 'pack', slug: 'odd' },
      { home: join(root, 'home') },
    );
    const walked = await computePackDigest(result.dir);
    expect(walked.entries.map((entry) => `${entry.mode} ${entry.path}`)).toEqual([
      'f agent.yaml',
      'x pack.sig/hook.js',
      'f skills/web/pack.sig',
    ]);
    expect(result.digest).toBe(walked.digest);
  });

  it.each([1, 2, 3, 4, 5, 6])(
    'random archive %i: the digest an install records is the walk of what it wrote',
    async (seed) => {
      const next = seededRandom(seed);
      const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
      // Single characters, and a few that are more (NFD é, a space inside, astral).
      const parts = [...'aBz_-.0~+é技', 'e\u0301', '😀', 'x y'];
      const folders = [
        '',
        'pack.sig',
        '.claude/hooks',
        'skills/web',
        'a-b',
        'a',
        'a/b',
        'node_modules/x',
      ];
      const entries: TarInput[] = [{ name: 'agent.yaml', content: manifest('random', '1.0.0') }];
      // Names that extraction would refuse as colliding (case, NFC) or as a file and a folder.
      const taken = new Set(['agent.yaml']);
      const fold = (path: string) => path.normalize('NFC').toLowerCase();
      for (let i = 0; i < 30; i++) {
        let name = '';
        for (let j = 1 + Math.floor(next() * 3); j > 0; j--) name += pick(parts);
        if (name.startsWith('.') || name.endsWith('.') || name.endsWith(' ')) name = `n${name}n`;
        const folder = pick(folders);
        const path = folder === '' ? name : `${folder}/${name}`;
        const key = fold(path);
        if (
          [...taken].some(
            (other) => other === key || other.startsWith(`${key}/`) || key.startsWith(`${other}/`),
          )
        )
          continue;
        taken.add(key);
        const bytes = Buffer.alloc(Math.floor(next() * 3000));
        for (let k = 0; k < bytes.length; k++) bytes[k] = Math.floor(next() * 256);
        entries.push({ name: path, content: bytes, ...(next() < 0.3 ? { mode: 0o755 } : {}) });
      }
      if (
        !taken.has('pack.sig') &&
        ![...taken].some((key) => key.startsWith('pack.sig/')) &&
        next() < 0.5
      )
        entries.push({ name: 'pack.sig', content: 'eyJ.not.checked\n' });
      const root = await tempDir();
      const file = join(root, 'random.tgz');
      await writeFile(file, await makeTgz(entries));
      const store = await openPackArchive(file, { env: {} });
      const result = await installPack(
        store,
        { type: 'pack', slug: 'random' },
        { home: join(root, 'home') },
      );
      expect(result.digest).toBe((await computePackDigest(result.dir)).digest);
    },
  );

  it('a tampered archive with signatures required: ERR_SIGNATURE_REFUSED, nothing installed', async () => {
    const { file, home, selectKey } = await signedExport();
    const tar = gunzipSync(await readFile(file));
    const at = tar.indexOf('# demo 1.2.0');
    tar.write('# DEMO', at, 'latin1'); // same length, so only the content differs…
    // …and the header checksum stays valid because only file data changed.
    await writeFile(file, gzipSync(tar));
    const store = await openPackArchive(file, { env: {} });
    const error = await failure(
      installPack(store, { type: 'pack', slug: 'demo' }, { home, requireSigned: true, selectKey }),
    );
    expect(error?.code).toBe('ERR_SIGNATURE_REFUSED');
    expect(await readdir(join(home, 'agents', 'demo'))).toEqual([]);
    // A trust root without the requirement refuses it too (issue 9 W11).
    expect(
      (await failure(installPack(store, { type: 'pack', slug: 'demo' }, { home, selectKey })))
        ?.code,
    ).toBe('ERR_SIGNATURE_REFUSED');
  });

  it('hostile archives get the extraction refusals, with nothing written outside', async () => {
    const root = await tempDir();
    const home = join(root, 'home');
    const escape = join(root, 'escape.tgz');
    await writeFile(
      escape,
      await makeTgz([
        { name: 'agent.yaml', content: manifest('evil', '1.0.0') },
        { name: '../outside.txt', content: 'pwned' },
      ]),
    );
    const store = await openPackArchive(escape, { env: {} });
    const error = await failure(installPack(store, { type: 'pack', slug: 'evil' }, { home }));
    expect(error?.code).toBe('ERR_ARCHIVE_PATH_UNSAFE');
    expect((await readdir(root)).sort()).toEqual(['escape.tgz', 'home']);
    expect(await readdir(join(home, 'agents', 'evil'))).toEqual([]);

    const noManifest = join(root, 'none.tgz');
    await writeFile(noManifest, await makeTgz([{ name: 'README.md', content: 'hi' }]));
    expect((await failure(openPackArchive(noManifest, { env: {} })))?.code).toBe(
      'ERR_PACK_INVALID',
    );
    const notGzip = join(root, 'plain.tgz');
    await writeFile(notGzip, 'not an archive');
    expect((await failure(openPackArchive(notGzip, { env: {} })))?.code).toBe(
      'ERR_ARCHIVE_NOT_GZIP',
    );
    const tooLarge = await failure(openPackArchive(escape, { env: {}, maxBytes: 10 }));
    expect(tooLarge?.code).toBe('ERR_DOWNLOAD_TOO_LARGE');
  });

  it('reading the manifest out of a decompression bomb is refused with the verdict extraction gives', async () => {
    const root = await tempDir();
    // 2 MiB of zeros before agent.yaml: about 1000:1, past the 200:1 ratio once 1 MiB is out.
    const bomb = gzipSync(
      await makeTar([
        { name: 'zeros', content: Buffer.alloc(2 * 1024 * 1024) },
        { name: 'agent.yaml', content: manifest('demo', '1.0.0') },
      ]),
    );
    const file = join(root, 'bomb.tgz');
    await writeFile(file, bomb);
    const opened = await failure(openPackArchive(file, { env: {} }));
    const extracted = await failure(extractArchive(bomb, join(root, 'out')));
    expect(opened?.code).toBe('ERR_ARCHIVE_RATIO');
    expect(opened?.message).toMatch(/^compression ratio above 200:1 \(\d+ bytes from \d+\)/);
    expect(opened?.message).toBe(extracted?.message);
  });

  it('a file replaced between opening and installing is refused (its SHA-256 changed)', async () => {
    const { root, file, home } = await signedExport();
    const store = await openPackArchive(file, { env: {} });
    const other = await writePack(join(root, 'other'), 'demo', '1.2.0', { 'skills/a.md': 'b!' });
    await exportPack(other, { out: file });
    const error = await failure(installPack(store, { type: 'pack', slug: 'demo' }, { home }));
    expect(isStoreError(error)).toBe(true);
    expect(['ERR_DOWNLOAD_INTEGRITY', 'ERR_DOWNLOAD_SIZE_MISMATCH']).toContain(error?.code);
    expect(await readdir(join(home, 'agents', 'demo'))).toEqual([]);
  });
});

describe('names no install accepts', () => {
  // What `store build`, `pack export` and `store push` write must be what extraction accepts:
  // these names build on Linux, and every install of the result was refused.
  const CASES: Array<[string, Record<string, string>]> = [
    ['a case twin (README.md beside readme.md)', { 'README.md': 'a', 'readme.md': 'b' }],
    ['an NTFS stream name', { 'skills/a:b.md': 'x' }],
    ['a Windows-reserved name', { 'hooks/CON.sh': 'x' }],
    ['a name ending in a dot', { 'notes.': 'x' }],
  ];
  for (const [name, files] of CASES) {
    it(`${name}: ERR_BUILD_UNSUPPORTED_ENTRY from export, build and push, nothing written`, async () => {
      const root = await tempDir();
      const dir = await writePack(join(root, 'packs', 'odd'), 'odd', '1.0.0', files);
      const out = join(root, 'out');
      const refusals = [
        await failure(exportPack(dir, { out: join(out, 'odd.tgz') })),
        await failure(buildStaticStore(join(root, 'packs'), { out })),
        // Refused before any request: nothing listens on port 1.
        await failure(
          pushPackFolder(dir, 'oci://127.0.0.1:1/x', { plainHttp: true, credentials: false }),
        ),
      ];
      expect(refusals.map((e) => e?.code)).toEqual(Array(3).fill('ERR_BUILD_UNSUPPORTED_ENTRY'));
      expect(existsSync(out)).toBe(false);
    });
  }
});
