import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { computePackDigest } from '@packwarden/pack-digest';
import { generateKeypair, signPack, type KeySelector } from '@packwarden/pack-signature';
import { loadPackTrustRoot, selectTrustedKey } from '@packwarden/trust-root';
import { describe, expect, it } from 'vitest';
import { buildStaticStore, installPack, openStore, type StoreError } from '../src/index.js';
import { listTree, makeTgz, serveDir, tempDir, writePack } from './helpers.js';

async function storeWithPacks(versions: string[] = ['1.0.0', '2.0.0']) {
  const root = await tempDir();
  for (const v of versions)
    await writePack(join(root, 'packs', 'demo', v), 'demo', v, {
      '!bin/run.sh': '#!/bin/sh\necho hi\n',
      'skills/a.md': v,
    });
  const out = join(root, 'store');
  const built = await buildStaticStore(join(root, 'packs'), { out });
  return { root, out, built, home: join(root, 'home') };
}

const rejection = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as StoreError,
  );

describe('installPack from a static store over HTTP', () => {
  it('installs into <home>/agents/<slug>/<version>/, switches current.txt, refuses a reinstall, replaces with force', async () => {
    const { out, home } = await storeWithPacks();
    const server = await serveDir(out);
    const store = await openStore({ url: `${server.url}/index.json`, env: {}, cacheDir: false });
    expect(store.kind).toBe('static');
    expect(store.info({ type: 'pack', slug: 'demo' })).toMatchObject({
      latestVersion: '2.0.0',
      versions: ['2.0.0', '1.0.0'],
    });

    const phases: string[] = [];
    const first = await installPack(
      store,
      { type: 'pack', slug: 'demo', version: '1.0.0' },
      { home, onProgress: (p) => phases.push(p.phase) },
    );
    expect(first).toMatchObject({
      slug: 'demo',
      version: '1.0.0',
      replaced: false,
      dir: join(home, 'agents', 'demo', '1.0.0'),
    });
    expect(first.archiveSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(first.digest).toBe((await computePackDigest(first.dir)).digest);
    expect(phases).toContain('download');
    expect(phases.at(-1)).toBe('install');
    expect(await readFile(join(home, 'agents', 'demo', 'current.txt'), 'utf8')).toBe('1.0.0\n');
    expect((await stat(join(first.dir, 'bin/run.sh'))).mode & 0o777).toBe(0o755);
    expect((await stat(join(first.dir, 'skills/a.md'))).mode & 0o777).toBe(0o644);

    const latest = await installPack(store, { type: 'pack', slug: 'demo' }, { home });
    expect(latest.version).toBe('2.0.0');
    expect(await readFile(join(home, 'agents', 'demo', 'current.txt'), 'utf8')).toBe('2.0.0\n');

    const again = await rejection(
      installPack(store, { type: 'pack', slug: 'demo', version: '2.0.0' }, { home }),
    );
    expect(again?.code).toBe('ERR_ALREADY_INSTALLED');
    const forced = await installPack(
      store,
      { type: 'pack', slug: 'demo', version: '2.0.0' },
      { home, force: true },
    );
    expect(forced.replaced).toBe(true);
    expect(await readdir(join(home, 'agents', 'demo'))).toEqual(['1.0.0', '2.0.0', 'current.txt']);
  });

  it('revalidates the index with its ETag and reuses cached archives (verified on read)', async () => {
    const { out, home, root } = await storeWithPacks(['1.0.0']);
    const server = await serveDir(out);
    const cacheDir = join(root, 'cache');
    const cacheKey = randomBytes(32);
    const open = () => openStore({ url: `${server.url}/index.json`, env: {}, cacheDir, cacheKey });
    await installPack(await open(), { type: 'pack', slug: 'demo' }, { home });
    const store = await open();
    const indexRequests = server.requests.filter((r) => r.url === '/index.json');
    expect(indexRequests).toHaveLength(2);
    expect(indexRequests[1]!.headers['if-none-match']).toMatch(/^"/);
    const archiveRequests = () => server.requests.filter((r) => r.url!.endsWith('.tar.gz')).length;
    expect(archiveRequests()).toBe(1);
    await installPack(store, { type: 'pack', slug: 'demo' }, { home, force: true });
    expect(archiveRequests()).toBe(1); // served from the cache
    // A cached archive that was tampered with is dropped and downloaded again.
    const [cached] = await readdir(join(cacheDir, 'archives'));
    const cachedPath = join(cacheDir, 'archives', cached!);
    const bytes = await readFile(cachedPath);
    bytes[bytes.length - 10] = bytes[bytes.length - 10]! ^ 0xff;
    await writeFile(cachedPath, bytes);
    await installPack(store, { type: 'pack', slug: 'demo' }, { home, force: true });
    expect(archiveRequests()).toBe(2);
    expect(
      createHash('sha256')
        .update(await readFile(cachedPath))
        .digest('hex'),
    ).toBe(cached!.replace('.tar.gz', ''));
  });

  it('refuses an archive whose SHA-256 or size differs from the index, leaving the previous install', async () => {
    const { out, home } = await storeWithPacks(['1.0.0']);
    const server = await serveDir(out);
    const store = await openStore({ url: `${server.url}/index.json`, env: {}, cacheDir: false });
    await installPack(store, { type: 'pack', slug: 'demo' }, { home });
    const before = await listTree(home);
    const index = JSON.parse(await readFile(join(out, 'index.json'), 'utf8'));
    const version = index.artifacts[0].versions[0];
    for (const [patch, code] of [
      [{ sha256: 'a'.repeat(64) }, 'ERR_DOWNLOAD_INTEGRITY'],
      [{ size: version.size - 1 }, 'ERR_DOWNLOAD_SIZE_MISMATCH'],
      [{ size: version.size + 1 }, 'ERR_DOWNLOAD_SIZE_MISMATCH'],
      [{ digest: 'b'.repeat(64) }, 'ERR_PACK_DIGEST_MISMATCH'],
    ] as const) {
      index.artifacts[0].versions[0] = { ...version, ...patch };
      await writeFile(join(out, 'index.json'), JSON.stringify(index));
      const tampered = await openStore({
        url: `${server.url}/index.json`,
        env: {},
        cacheDir: false,
      });
      const error = await rejection(
        installPack(tampered, { type: 'pack', slug: 'demo' }, { home, force: true }),
      );
      expect(error?.code).toBe(code);
      expect(await listTree(home)).toEqual(before);
    }
  });

  it('refuses a pack whose manifest is not the requested slug and version, and a pack without a manifest', async () => {
    const root = await tempDir();
    const storeDir = join(root, 'store');
    await mkdir(storeDir);
    const archives = {
      wrongname: await makeTgz([
        { name: 'agent.yaml', content: (await import('./helpers.js')).manifest('other', '1.0.0') },
      ]),
      wrongversion: await makeTgz([
        {
          name: 'agent.yaml',
          content: (await import('./helpers.js')).manifest('wrongversion', '9.9.9'),
        },
      ]),
      nomanifest: await makeTgz([{ name: 'README.md', content: 'hi' }]),
    };
    const artifacts = Object.entries(archives).map(([slug, archive]) => ({
      type: 'pack',
      slug,
      latestVersion: '1.0.0',
      versions: [
        {
          version: '1.0.0',
          archive: `${slug}.tgz`,
          size: archive.length,
          sha256: createHash('sha256').update(archive).digest('hex'),
          digest: '0'.repeat(64),
        },
      ],
    }));
    for (const [slug, archive] of Object.entries(archives))
      await writeFile(join(storeDir, `${slug}.tgz`), archive);
    await writeFile(
      join(storeDir, 'index.json'),
      JSON.stringify({ format: 'packwarden-store/1', artifacts }),
    );
    const store = await openStore({ url: storeDir, env: {}, cacheDir: false });
    const home = join(root, 'home');
    expect(
      (await rejection(installPack(store, { type: 'pack', slug: 'wrongname' }, { home })))?.code,
    ).toBe('ERR_PACK_IDENTITY_MISMATCH');
    expect(
      (await rejection(installPack(store, { type: 'pack', slug: 'wrongversion' }, { home })))?.code,
    ).toBe('ERR_PACK_IDENTITY_MISMATCH');
    expect(
      (await rejection(installPack(store, { type: 'pack', slug: 'nomanifest' }, { home })))?.code,
    ).toBe('ERR_PACK_INVALID');
    for (const slug of Object.keys(archives))
      expect(await readdir(join(home, 'agents', slug))).toEqual([]);
  });

  it('with requireSigned (option or PACKWARDEN_REQUIRE_SIGNED_PACK=1) installs only verified packs', async () => {
    const root = await tempDir();
    const key = await generateKeypair({ kid: 'test-release' });
    const signedDir = await writePack(join(root, 'packs', 'signed'), 'signed', '1.0.0');
    await signPack(signedDir, { privateKeyPem: key.privateKeyPem, kid: key.kid });
    await writePack(join(root, 'packs', 'unsigned'), 'unsigned', '1.0.0');
    const out = join(root, 'store');
    const built = await buildStaticStore(join(root, 'packs'), { out });
    expect(built.packs.map((p) => [p.slug, p.signed])).toEqual([
      ['signed', true],
      ['unsigned', false],
    ]);
    const store = await openStore({ url: out, env: {}, cacheDir: false });
    const trustRoot = await loadPackTrustRoot({ keys: { [key.kid]: key.publicKeyPem }, env: {} });
    const selectKey: KeySelector = (kid, at) => selectTrustedKey(trustRoot, kid, { at });
    const home = join(root, 'home');

    const ok = await installPack(
      store,
      { type: 'pack', slug: 'signed' },
      { home, requireSigned: true, selectKey },
    );
    expect(ok.verification?.kind).toBe('verified');

    const refused = await rejection(
      installPack(
        store,
        { type: 'pack', slug: 'unsigned' },
        { home, env: { PACKWARDEN_REQUIRE_SIGNED_PACK: '1' }, selectKey },
      ),
    );
    expect(refused?.code).toBe('ERR_SIGNATURE_REFUSED');
    expect((refused?.verification as { kind: string }).kind).toBe('unsigned');
    expect(await readdir(join(home, 'agents', 'unsigned'))).toEqual([]);

    const noRoot = await rejection(
      installPack(
        store,
        { type: 'pack', slug: 'signed' },
        { home, env: { AGENTHIPPO_REQUIRE_SIGNED_PACK: '1' }, force: true },
      ),
    );
    expect(noRoot?.code).toBe('ERR_SIGNATURE_REFUSED');
    expect((noRoot?.verification as { kind: string }).kind).toBe('no-trust-root');
    // The refused reinstall left the verified install in place.
    expect(await readFile(join(home, 'agents', 'signed', '1.0.0', 'pack.sig'), 'utf8')).toMatch(
      /^ey/,
    );

    const otherKey = await generateKeypair({ kid: 'test-release' });
    const otherRoot = await loadPackTrustRoot({
      keys: { [otherKey.kid]: otherKey.publicKeyPem },
      env: {},
    });
    const badSig = await rejection(
      installPack(
        store,
        { type: 'pack', slug: 'signed' },
        {
          home,
          requireSigned: true,
          force: true,
          selectKey: (kid, at) => selectTrustedKey(otherRoot, kid, { at }),
        },
      ),
    );
    expect((badSig?.verification as { kind: string }).kind).toBe('invalid');
  });

  it('installs flat into a folder with `to`, refusing a non-empty one unless forced', async () => {
    const { out, root } = await storeWithPacks(['1.0.0']);
    const store = await openStore({
      url: pathToFileURL(join(out, 'index.json')).href,
      env: {},
      cacheDir: false,
    });
    const to = join(root, 'flat');
    const result = await installPack(store, { type: 'pack', slug: 'demo' }, { to });
    expect(result.dir).toBe(to);
    expect(await listTree(to)).toEqual([
      'AGENTS.md',
      'agent.yaml',
      'bin/',
      'bin/run.sh',
      'skills/',
      'skills/a.md',
    ]);
    await writeFile(join(to, 'extra.txt'), 'mine');
    expect(
      (await rejection(installPack(store, { type: 'pack', slug: 'demo' }, { to })))?.code,
    ).toBe('ERR_TARGET_NOT_EMPTY');
    expect(await readFile(join(to, 'extra.txt'), 'utf8')).toBe('mine');
    const forced = await installPack(store, { type: 'pack', slug: 'demo' }, { to, force: true });
    expect(forced.replaced).toBe(true);
    expect(await listTree(to)).not.toContain('extra.txt');
    expect((await readdir(root)).filter((n) => n.startsWith('.flat'))).toEqual([]);
  });

  it('refuses unknown artifacts and versions, and non-pack artifacts', async () => {
    const { out, home } = await storeWithPacks(['1.0.0']);
    const store = await openStore({ url: out, env: {}, cacheDir: false });
    expect(
      (await rejection(installPack(store, { type: 'pack', slug: 'nope' }, { home })))?.code,
    ).toBe('ERR_ARTIFACT_NOT_FOUND');
    expect(
      (
        await rejection(
          installPack(store, { type: 'pack', slug: 'demo', version: '3.0.0' }, { home }),
        )
      )?.code,
    ).toBe('ERR_VERSION_NOT_FOUND');
    expect(
      (await rejection(installPack(store, { type: 'skill', slug: 'demo' }, { home })))?.code,
    ).toBe('ERR_ARTIFACT_TYPE_UNSUPPORTED');
  });
});

describe('static store transport rules', () => {
  it('follows same-origin redirects and refuses cross-origin ones', async () => {
    const { out, home } = await storeWithPacks(['1.0.0']);
    const other = await serveDir(out);
    const server = await serveDir(out, {
      override: (req, res) => {
        if (req.url === '/moved/index.json') {
          res.writeHead(302, { location: '/index.json' }).end();
          return true;
        }
        if (req.url?.endsWith('.tar.gz')) {
          res.writeHead(302, { location: `${other.url}${req.url}` }).end();
          return true;
        }
        return false;
      },
    });
    const store = await openStore({
      url: `${server.url}/moved/index.json`,
      env: {},
      cacheDir: false,
    });
    expect(store.list()).toHaveLength(1);
    const error = await rejection(installPack(store, { type: 'pack', slug: 'demo' }, { home }));
    expect(error?.code).toBe('ERR_STORE_REDIRECT');
    expect(other.requests).toHaveLength(0);
  });

  it('refuses plain HTTP except loopback, and credentials in URLs', async () => {
    expect(
      (await rejection(openStore({ url: 'http://example.com/index.json', env: {} })))?.code,
    ).toBe('ERR_STORE_URL_INVALID');
    expect(
      (await rejection(openStore({ url: 'https://u:p@example.com/index.json', env: {} })))?.code,
    ).toBe('ERR_STORE_URL_INVALID');
    expect(
      (await rejection(openStore({ url: 'ftp://example.com/index.json', env: {} })))?.code,
    ).toBe('ERR_STORE_URL_INVALID');
  });

  it('refuses a remote index pointing at file:// archives', async () => {
    const root = await tempDir();
    await writeFile(
      join(root, 'index.json'),
      JSON.stringify({
        format: 'packwarden-store/1',
        artifacts: [
          {
            type: 'pack',
            slug: 'x',
            latestVersion: '1.0.0',
            versions: [
              {
                version: '1.0.0',
                archive: 'file:///etc/passwd',
                size: 1,
                sha256: 'a'.repeat(64),
                digest: 'a'.repeat(64),
              },
            ],
          },
        ],
      }),
    );
    const server = await serveDir(root);
    const store = await openStore({ url: `${server.url}/index.json`, env: {}, cacheDir: false });
    expect(() => store.resolve({ type: 'pack', slug: 'x' })).toThrow(
      expect.objectContaining({ code: 'ERR_STORE_URL_INVALID' }),
    );
  });

  it('times out on a server that never answers', async () => {
    const server = await serveDir(await tempDir(), { override: () => true });
    const error = await rejection(
      openStore({ url: `${server.url}/index.json`, env: {}, cacheDir: false, timeoutMs: 200 }),
    );
    expect(error?.code).toBe('ERR_STORE_TIMEOUT');
  });

  it('removes nothing but its own leftovers', async () => {
    const { out, home } = await storeWithPacks(['1.0.0']);
    const store = await openStore({ url: out, env: {}, cacheDir: false });
    await mkdir(join(home, 'agents', 'demo', '.staging-deadbeef'), { recursive: true });
    await mkdir(join(home, 'agents', 'demo', 'keep-me'), { recursive: true });
    await installPack(store, { type: 'pack', slug: 'demo' }, { home });
    expect(await readdir(join(home, 'agents', 'demo'))).toEqual([
      '1.0.0',
      'current.txt',
      'keep-me',
    ]);
    await rm(join(home, 'agents'), { recursive: true });
  });

  it('puts back a version a killed forced reinstall had moved aside, and clears temp files', async () => {
    const { out, home } = await storeWithPacks(['1.0.0', '2.0.0']);
    const store = await openStore({ url: out, env: {}, cacheDir: false });
    const packDir = join(home, 'agents', 'demo');
    await installPack(store, { type: 'pack', slug: 'demo', version: '1.0.0' }, { home });
    // As if killed between "rename 1.0.0 aside" and "rename staging into 1.0.0".
    await rename(join(packDir, '1.0.0'), join(packDir, '.1.0.0.old-0123456789ab'));
    await mkdir(join(packDir, '.staging-0123456789ab', 'half'), { recursive: true });
    await writeFile(join(packDir, 'current.txt.tmp-0123456789ab'), '2.0.0');
    await installPack(store, { type: 'pack', slug: 'demo', version: '2.0.0' }, { home });
    expect((await readdir(packDir)).sort()).toEqual(['1.0.0', '2.0.0', 'current.txt']);
    expect(await readFile(join(packDir, '1.0.0', 'skills', 'a.md'), 'utf8')).toBe('1.0.0');
    // As if killed after the swap, before removing what was set aside: that copy goes.
    await mkdir(join(packDir, '.2.0.0.old-0123456789ab'));
    await installPack(
      store,
      { type: 'pack', slug: 'demo', version: '1.0.0' },
      { home, force: true, allowDowngrade: true },
    );
    expect((await readdir(packDir)).sort()).toEqual(['1.0.0', '2.0.0', 'current.txt']);
    expect(await readFile(join(packDir, 'current.txt'), 'utf8')).toBe('1.0.0\n');
  });

  it('writes current.txt mode 0644 whatever the umask, and clears a killed writer’s temporary current.txt', async () => {
    const { out, home } = await storeWithPacks(['1.0.0', '2.0.0']);
    const store = await openStore({ url: out, env: {}, cacheDir: false });
    const packDir = join(home, 'agents', 'demo');
    await installPack(store, { type: 'pack', slug: 'demo', version: '1.0.0' }, { home });
    // The name writeFileAtomic gives its temporary file, from a writer killed before the rename.
    await writeFile(join(packDir, '.current.txt.4194399.0123456789ab.tmp'), '9.9.9\n');
    const previous = process.umask(0o077);
    try {
      await installPack(store, { type: 'pack', slug: 'demo', version: '2.0.0' }, { home });
    } finally {
      process.umask(previous);
    }
    expect((await readdir(packDir)).sort()).toEqual(['1.0.0', '2.0.0', 'current.txt']);
    expect(await readFile(join(packDir, 'current.txt'), 'utf8')).toBe('2.0.0\n');
    expect((await stat(join(packDir, 'current.txt'))).mode & 0o777).toBe(0o644);
    await rm(join(home, 'agents'), { recursive: true });
  });

  it('refuses an index body that drips slower than the timeout, and honours abort signals', async () => {
    // The body never ends until the client hangs up: only `timeoutMs` covering the body (not
    // just the headers) ends the request, and no wall-clock sleep races the timeout.
    const server = await serveDir(await tempDir(), {
      override: async (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"version":1,');
        await new Promise((r) => res.once('close', r));
        return true;
      },
    });
    const slow = await rejection(
      openStore({ url: `${server.url}/index.json`, env: {}, cacheDir: false, timeoutMs: 300 }),
    );
    expect(slow?.code).toBe('ERR_STORE_TIMEOUT');
    const controller = new AbortController();
    controller.abort();
    const aborted = await rejection(
      openStore({
        url: `${server.url}/index.json`,
        env: {},
        cacheDir: false,
        signal: controller.signal,
      }),
    );
    expect(aborted?.code).toBe('ERR_ABORTED');
    const { out, home } = await storeWithPacks(['1.0.0']);
    const store = await openStore({ url: out, env: {}, cacheDir: false });
    const abortedInstall = await rejection(
      installPack(store, { type: 'pack', slug: 'demo' }, { home, signal: controller.signal }),
    );
    expect(abortedInstall?.code).toBe('ERR_ABORTED');
    expect(await readdir(join(home, 'agents', 'demo'))).toEqual([]);
  });

  it('waits for a live lock holder (ERR_INSTALL_LOCKED after lockTimeoutMs) and breaks a dead one', async () => {
    const { out, home } = await storeWithPacks(['1.0.0']);
    const store = await openStore({ url: out, env: {}, cacheDir: false });
    const packDir = join(home, 'agents', 'demo');
    await mkdir(packDir, { recursive: true });
    const lock = (pid: number) =>
      JSON.stringify({ pid, host: hostname(), at: new Date().toISOString() });
    await writeFile(join(packDir, '.lock'), lock(process.pid));
    const locked = await rejection(
      installPack(store, { type: 'pack', slug: 'demo' }, { home, lockTimeoutMs: 300 }),
    );
    expect(locked?.code).toBe('ERR_INSTALL_LOCKED');
    expect(locked?.message).toContain(`pid ${process.pid}`);
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    await writeFile(join(packDir, '.lock'), lock(dead));
    await installPack(store, { type: 'pack', slug: 'demo' }, { home, lockTimeoutMs: 300 });
    expect((await readdir(packDir)).sort()).toEqual(['1.0.0', 'current.txt']);
  });

  it('reports the same Pack digest v1 as computePackDigest of the installed folder, for awkward trees', async () => {
    const root = await tempDir();
    const dir = await writePack(join(root, 'p'), 'awkward', '1.0.0', {
      '!bin/run': '#!/bin/sh\n',
      'cafe\u0301/x.md': 'nfd',
      'Zeta.md': 'z',
      'zeta-lower/a': 'a',
      '.claude/hooks/pack.sig': 'a nested pack.sig is content',
      'empty.txt': '',
      'big.bin': randomBytes(3 * 1024 * 1024).toString('base64'),
      'é.md': 'nfc',
    });
    await writeFile(join(dir, 'pack.sig'), 'not verified here\n');
    const out = join(root, 'store');
    await buildStaticStore(dir, { out });
    const store = await openStore({ url: out, env: {}, cacheDir: false });
    const result = await installPack(
      store,
      { type: 'pack', slug: 'awkward' },
      { home: join(root, 'home') },
    );
    expect(result.digest).toBe((await computePackDigest(result.dir)).digest);
    expect(result.digest).toBe((await computePackDigest(dir)).digest);
  });

  it('caches under $PACKWARDEN_HOME/cache/store by default (the index only with a cacheKey)', async () => {
    const { out, root } = await storeWithPacks(['1.0.0']);
    const server = await serveDir(out);
    const env = { PACKWARDEN_HOME: join(root, 'pwhome') };
    const store = await openStore({ url: `${server.url}/index.json`, env });
    const result = await installPack(store, { type: 'pack', slug: 'demo' }, { env });
    expect(result.dir).toBe(join(root, 'pwhome', 'agents', 'demo', '1.0.0'));
    expect(await readdir(join(root, 'pwhome', 'cache', 'store'))).toEqual(['archives']);
    expect(await readdir(join(root, 'pwhome', 'cache', 'store', 'archives'))).toEqual([
      `${result.archiveSha256}.tar.gz`,
    ]);
    await openStore({ url: `${server.url}/index.json`, env, cacheKey: randomBytes(32) });
    expect(await readdir(join(root, 'pwhome', 'cache', 'store', 'index'))).toHaveLength(1);
  });
});
