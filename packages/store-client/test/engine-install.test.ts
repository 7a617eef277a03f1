import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { generateKeypair, signEngine } from '@packwarden/pack-signature';
import { loadPackTrustRoot, selectTrustedKey } from '@packwarden/trust-root';
import { describe, expect, it } from 'vitest';
import {
  buildStaticStore,
  installPack,
  openStore,
  parseArtifactRef,
  parseLockfile,
  type StoreError,
} from '../src/index.js';
import {
  listTree,
  makeTar,
  makeTgz,
  startServer,
  tempDir,
  writePack,
  type TarInput,
} from './helpers.js';

// An AgentHippo-style store with an engine, as the store's scripts/build-index.ts writes it:
// a row {id: "engine/<slug>", type: "engine", slug, latestVersion: <package.json version>}, the
// engine in engines/<slug>/ of the repository, a version = the tag engines/<slug>/v<version>.
const TOP = 'acme-store-1234567';
type Key = Awaited<ReturnType<typeof generateKeypair>>;

async function engineFolder(
  options: { id?: string; version?: string; key?: Key; extra?: Record<string, string> } = {},
): Promise<{ dir: string; files: Record<string, Buffer> }> {
  const dir = await tempDir('engine-src-');
  const files: Record<string, string> = {
    'engine.manifest.json': JSON.stringify({
      version: 2,
      id: options.id ?? 'echo',
      entry: './engine.mjs',
      engineExport: 'Engine',
    }),
    'package.json': JSON.stringify({ name: 'echo', version: options.version ?? '1.0.0' }),
    'engine.mjs': 'export class Engine { async run(turn) { await turn.emitter.text("hi"); } }\n',
    ...options.extra,
  };
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  if (options.key) {
    await signEngine(dir, { privateKeyPem: options.key.privateKeyPem, kid: options.key.kid });
  }
  const out: Record<string, Buffer> = {};
  for (const name of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!name.isFile()) continue;
    const path = join(name.parentPath, name.name).slice(dir.length + 1);
    out[path] = await readFile(join(dir, path));
  }
  return { dir, files: out };
}

async function agentHippoStore(files: Record<string, Buffer>, entries: TarInput[] = []) {
  const tarball = gzipSync(
    await makeTar([
      { name: `${TOP}/`, type: 'directory' },
      { name: `${TOP}/engines/echo/`, type: 'directory' },
      ...Object.entries(files).map(([path, content]) => ({
        name: `${TOP}/engines/echo/${path}`,
        content,
      })),
      ...entries,
    ]),
  );
  const api = await startServer((req, res) => {
    if (req.url === '/repos/acme/store/tarball/engines/echo/v1.0.0')
      res.writeHead(200, { 'content-type': 'application/x-gzip' }).end(tarball);
    else res.writeHead(404).end('{"message":"Not Found"}');
  });
  const index = {
    version: 1,
    artifacts: [
      {
        id: 'engine/echo',
        type: 'engine',
        slug: 'echo',
        displayName: 'Echo',
        tags: ['engine'],
        latestVersion: '1.0.0',
      },
    ],
  };
  const raw = await startServer((_req, res) => void res.end(JSON.stringify(index)));
  const env = {
    PACKWARDEN_STORE_URL: `${raw.url}/store-index.json`,
    PACKWARDEN_GITHUB_API_URL: api.url,
    PACKWARDEN_STORE_REPO: 'acme/store',
  };
  return { env, api };
}

async function selectorFor(...keys: Key[]) {
  const root = await loadPackTrustRoot({
    keys: Object.fromEntries(keys.map((key) => [key.kid, key.publicKeyPem])),
    env: {},
    cacheDir: false,
  });
  return (kid: string, at: Date) => selectTrustedKey(root, kid, { at });
}

async function failure(promise: Promise<unknown>): Promise<StoreError> {
  return promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (error: unknown) => error as StoreError,
  );
}

describe('engine artifacts', () => {
  it('engine/<slug> and engines/<slug> are engine references; the lockfile keeps engine/<slug>', () => {
    expect(parseArtifactRef('engine/echo@v1.0.0')).toEqual({
      type: 'engine',
      slug: 'echo',
      version: '1.0.0',
    });
    expect(parseArtifactRef('engines/echo').type).toBe('engine');
    const entry = {
      version: '1.0.0',
      source: 'https://x/store-index.json',
      resolved: 'https://x/a.tgz',
      archiveSha256: 'a'.repeat(64),
      packDigest: 'b'.repeat(64),
      signer: null,
    };
    const lock = parseLockfile(
      JSON.stringify({ lockfileVersion: 1, packs: { 'engine/echo': entry } }),
    );
    expect(lock.packs['engine/echo']).toEqual(entry);
  });

  it('AgentHippo: a signed engine installs into <home>/engines/<id>/<version>/ with current.txt, verified', async () => {
    const key = await generateKeypair({ kid: 'release' });
    const { files } = await engineFolder({ key });
    const { env, api } = await agentHippoStore(files);
    const store = await openStore({ env, cacheDir: false });
    expect(store.list().map((a) => `${a.type}/${a.slug}@${a.latestVersion}`)).toEqual([
      'engine/echo@1.0.0',
    ]);
    expect(store.resolve(parseArtifactRef('engine/echo')).source).toMatchObject({
      kind: 'github-tarball',
      tag: 'engines/echo/v1.0.0',
      folder: 'engines/echo',
    });
    const home = await tempDir();
    const result = await installPack(store, parseArtifactRef('engine/echo'), {
      home,
      env,
      requireSigned: true,
      selectKey: await selectorFor(key),
    });
    expect(result.dir).toBe(join(home, 'engines', 'echo', '1.0.0'));
    expect(result.verification).toMatchObject({ kind: 'verified', engine: 'echo', kid: 'release' });
    expect(await readFile(join(home, 'engines', 'echo', 'current.txt'), 'utf8')).toBe('1.0.0\n');
    expect(await listTree(result.dir)).toEqual([
      'engine.manifest.json',
      'engine.mjs',
      'engine.sig',
      'package.json',
    ]);
    expect(api.requests).toHaveLength(1);
  });

  it('requireSigned refuses an unsigned engine and one signed by an untrusted key; nothing is written', async () => {
    const key = await generateKeypair({ kid: 'release' });
    const stranger = await generateKeypair({ kid: 'stranger' });
    for (const signer of [undefined, stranger]) {
      const { files } = await engineFolder(signer ? { key: signer } : {});
      const { env } = await agentHippoStore(files);
      const store = await openStore({ env, cacheDir: false });
      const home = await tempDir();
      const error = await failure(
        installPack(store, parseArtifactRef('engine/echo'), {
          home,
          env,
          requireSigned: true,
          selectKey: await selectorFor(key),
        }),
      );
      expect(error.code).toBe('ERR_SIGNATURE_REFUSED');
      expect((error.verification as { kind: string }).kind).toBe(
        signer ? 'untrusted-key' : 'unsigned',
      );
      // Only the lock's folder exists: no version, no current.txt, no staging left.
      expect(await listTree(join(home, 'engines', 'echo'))).toEqual([]);
    }
  });

  it('the archive must hold a Custom Engine V2 manifest whose id is the one asked for, and no pack.sig', async () => {
    const cases: Array<[Parameters<typeof engineFolder>[0], string, TarInput[]?]> = [
      [{ id: 'other' }, 'ERR_PACK_IDENTITY_MISMATCH'],
      [{ version: '2.0.0' }, 'ERR_PACK_IDENTITY_MISMATCH'],
      [{ extra: { 'engine.manifest.json': '{"version":1,"id":"echo"}' } }, 'ERR_ENGINE_INVALID'],
      [{ extra: { 'pack.sig': 'x' } }, 'ERR_ENGINE_INVALID'],
      // A root pack.sig folder, with files or empty: what the engine verifier and
      // `pack verify --installed` refuse (pack-signature's hasRootPackSignature).
      [{ extra: { 'pack.sig/hook.mjs': 'x' } }, 'ERR_ENGINE_INVALID'],
      [{}, 'ERR_ENGINE_INVALID', [{ name: `${TOP}/engines/echo/pack.sig/`, type: 'directory' }]],
    ];
    for (const [options, code, entries] of cases) {
      const { files } = await engineFolder(options);
      const { env } = await agentHippoStore(files, entries);
      const store = await openStore({ env, cacheDir: false });
      const home = await tempDir();
      const error = await failure(
        installPack(store, parseArtifactRef('engine/echo'), { home, env }),
      );
      expect(error.code).toBe(code);
      expect(existsSync(join(home, 'engines', 'echo', '1.0.0'))).toBe(false);
    }
  });

  it('the extraction refusals of packs hold for engines (a path escaping the folder)', async () => {
    const { files } = await engineFolder();
    const { env } = await agentHippoStore(files, [
      { name: `${TOP}/engines/echo/../../../escape.mjs`, content: 'x' },
    ]);
    const store = await openStore({ env, cacheDir: false });
    const home = await tempDir();
    const error = await failure(installPack(store, parseArtifactRef('engine/echo'), { home, env }));
    expect(error.code).toMatch(/^ERR_ARCHIVE_/);
    expect(existsSync(join(home, 'engines', 'echo', '1.0.0'))).toBe(false);
  });

  it('static store: the index digest and engine.sig are checked; a wrong digest is refused', async () => {
    const key = await generateKeypair({ kid: 'release' });
    const { dir, files } = await engineFolder({ key });
    const signed = await signEngine(dir, {
      privateKeyPem: key.privateKeyPem,
      kid: key.kid,
      write: false,
    });
    const archive = await makeTgz(
      Object.entries(files).map(([name, content]) => ({ name, content })),
    );
    const storeDir = await tempDir();
    await mkdir(join(storeDir, 'engines'));
    await writeFile(join(storeDir, 'engines', 'echo-1.0.0.tar.gz'), archive);
    const sigToken = (files['engine.sig'] ?? Buffer.alloc(0)).toString('utf8').trim();
    const row = (digest: string) => ({
      format: 'packwarden-store/1',
      artifacts: [
        {
          type: 'engine',
          slug: 'echo',
          latestVersion: '1.0.0',
          versions: [
            {
              version: '1.0.0',
              archive: 'engines/echo-1.0.0.tar.gz',
              size: archive.length,
              sha256: createHash('sha256').update(archive).digest('hex'),
              digest,
              signature: sigToken,
            },
          ],
        },
      ],
    });
    await writeFile(join(storeDir, 'index.json'), JSON.stringify(row(signed.digest)));
    const store = await openStore({ url: storeDir, cacheDir: false, env: {} });
    const home = await tempDir();
    const result = await installPack(store, parseArtifactRef('engine/echo@1.0.0'), {
      home,
      env: {},
      requireSigned: true,
      selectKey: await selectorFor(key),
    });
    expect(result.digest).toBe(signed.digest);
    expect(result.verification?.kind).toBe('verified');

    await writeFile(join(storeDir, 'index.json'), JSON.stringify(row('0'.repeat(64))));
    const lying = await openStore({ url: storeDir, cacheDir: false, env: {} });
    const error = await failure(
      installPack(lying, parseArtifactRef('engine/echo'), { home: await tempDir(), env: {} }),
    );
    expect(error.code).toBe('ERR_PACK_DIGEST_MISMATCH');
  });

  it('buildStaticStore puts <dir>/engines/<id>/ beside the packs; the built engine installs signed', async () => {
    const key = await generateKeypair({ kid: 'release' });
    const { dir } = await engineFolder({ key });
    const source = await tempDir();
    await writePack(join(source, 'packs', 'uses-echo'), 'uses-echo', '1.0.0');
    await mkdir(join(source, 'engines'));
    await writeFile(join(source, 'engines', '.keep'), '');
    const { cp } = await import('node:fs/promises');
    await cp(dir, join(source, 'engines', 'echo'), { recursive: true });
    const out = await tempDir();
    const built = await buildStaticStore(source, { out });
    expect(built.packs.map((p) => p.slug)).toEqual(['uses-echo']);
    expect(built.engines).toMatchObject([{ slug: 'echo', version: '1.0.0', signed: true }]);
    const signed = await signEngine(dir, {
      privateKeyPem: key.privateKeyPem,
      kid: key.kid,
      write: false,
    });
    expect(built.engines[0]!.digest).toBe(signed.digest);
    const store = await openStore({ url: out, cacheDir: false, env: {} });
    expect(store.list().map((a) => `${a.type}/${a.slug}`)).toEqual([
      'engine/echo',
      'pack/uses-echo',
    ]);
    const home = await tempDir();
    const result = await installPack(store, parseArtifactRef('engine/echo'), {
      home,
      env: {},
      requireSigned: true,
      selectKey: await selectorFor(key),
    });
    expect(result.verification?.kind).toBe('verified');
    expect(result.dir).toBe(join(home, 'engines', 'echo', '1.0.0'));
  });
});
