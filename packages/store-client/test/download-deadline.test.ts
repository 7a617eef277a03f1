// A store that drips one byte just inside the idle timeout used to hold a download, and the
// per-pack install lock, for as long as it liked. `downloadTimeoutMs` bounds the whole download:
// each kind of remote store drips its archive here with a short deadline and an idle timeout far
// longer than the drip interval, and the install must stop at the deadline with nothing left
// behind; the same store answering at once still installs.
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  buildPackManifest,
  buildStaticStore,
  installPack,
  isStoreError,
  openStore,
  pullPackArtifact,
  type Store,
} from '../src/index.js';
import { listTree, makeTar, manifest, startServer, tempDir, writePack } from './helpers.js';

const DEADLINE_MS = 300;
/** Far longer than the drip interval: only the deadline can stop a dripping download. */
const IDLE_MS = 10_000;
/** Generous for an honest loopback download, so a loaded machine does not fail it. */
const HONEST_DEADLINE_MS = 5_000;
/** How long a dripping store takes to send a whole archive: many times the deadline. */
const DRIP_TOTAL_MS = 3_000;
const DRIP_EVERY_MS = 25;

interface Server {
  /** `drip`: the archive trickles in over DRIP_TOTAL_MS; `honest`: sent at once. */
  mode: 'drip' | 'honest';
  /** Bytes of the archive sent, and whether the client hung up before the end. */
  sent: number;
  hungUp: boolean;
}

/** Sends `body` (with its length), all at once or a slice every DRIP_EVERY_MS. */
function send(server: Server, res: ServerResponse, body: Buffer): void {
  res.writeHead(200, { 'content-type': 'application/gzip', 'content-length': body.length });
  server.sent = 0;
  server.hungUp = false;
  if (server.mode === 'honest') {
    server.sent = body.length;
    res.end(body);
    return;
  }
  const slice = Math.max(1, Math.ceil(body.length / (DRIP_TOTAL_MS / DRIP_EVERY_MS)));
  const drip = setInterval(() => {
    const next = body.subarray(server.sent, server.sent + slice);
    server.sent += next.length;
    if (server.sent >= body.length) {
      clearInterval(drip);
      res.end(next);
    } else res.write(next);
  }, DRIP_EVERY_MS);
  res.on('close', () => {
    clearInterval(drip);
    if (server.sent < body.length) server.hungUp = true;
  });
}

async function failure(pending: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  const error = await pending.then(
    () => undefined,
    (e: unknown) => e,
  );
  return { error, ms: performance.now() - started };
}

function expectDeadlineRefusal(result: { error: unknown; ms: number }): void {
  const { error, ms } = result;
  expect(isStoreError(error), String(error)).toBe(true);
  expect((error as { code: string }).code, (error as Error).message).toBe('ERR_STORE_TIMEOUT');
  expect((error as Error).message).toMatch(/downloadTimeoutMs/);
  // Stopped at the deadline, not when the drip ended (DRIP_TOTAL_MS) or went idle (IDLE_MS).
  expect(ms).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
  expect(ms).toBeLessThan(DEADLINE_MS + 1_200);
}

/** A static store over HTTP: index.json at once, its archive as `server.mode` says. */
async function staticStore(root: string) {
  await writePack(join(root, 'packs', 'slow'), 'slow', '1.0.0', { 'skills/a.md': 'a'.repeat(64) });
  const built = await buildStaticStore(join(root, 'packs'), { out: join(root, 'store') });
  const archive = await readFile(join(root, 'store', built.packs[0]!.archive));
  const index = await readFile(join(root, 'store', 'index.json'));
  const server: Server = { mode: 'drip', sent: 0, hungUp: false };
  const http = await startServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/index.json') return void res.end(index);
    send(server, res, archive);
  });
  const cacheDir = join(root, 'cache');
  const store = await openStore({ url: `${http.url}/index.json`, env: {}, cacheDir });
  return { server, store, env: {}, slug: 'slow', cacheDir };
}

/** An AgentHippo store: store-index.json, and the GitHub API answering with the tag's tarball. */
async function agenthippoStore(root: string) {
  const top = 'acme-store-1234567';
  const tarball = gzipSync(
    await makeTar([
      { name: `${top}/`, type: 'directory' },
      { name: `${top}/agent-packs/slow/agent.yaml`, content: manifest('slow', '1.0.0') },
      { name: `${top}/agent-packs/slow/AGENTS.md`, content: 'b'.repeat(512) },
    ]),
  );
  const index = JSON.stringify({
    version: 1,
    artifacts: [{ id: 's', type: 'agent-pack', slug: 'slow', latestVersion: '1.0.0' }],
  });
  const server: Server = { mode: 'drip', sent: 0, hungUp: false };
  const http = await startServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/store-index.json') return void res.end(index);
    if (req.url?.startsWith('/repos/acme/store/tarball/')) return send(server, res, tarball);
    res.writeHead(404).end();
  });
  const env = {
    PACKWARDEN_STORE_URL: `${http.url}/store-index.json`,
    PACKWARDEN_GITHUB_API_URL: http.url,
    AGENTHIPPO_STORE_REPO: 'acme/store',
  };
  const cacheDir = join(root, 'cache');
  const store = await openStore({ env, cacheDir });
  return { server, store, env, slug: 'slow', cacheDir };
}

const STORES: [
  string,
  (root: string) => Promise<{
    server: Server;
    store: Store;
    env: Record<string, string>;
    slug: string;
    cacheDir: string;
  }>,
][] = [
  ['a static store archive', staticStore],
  ['an AgentHippo tarball', agenthippoStore],
];

describe('downloadTimeoutMs: the whole download within a deadline', () => {
  it.each(STORES)(
    '%s dripped slower than the deadline is ERR_STORE_TIMEOUT at the deadline; nothing is left, the lock is free',
    async (_name, make) => {
      const root = await tempDir('store-client-deadline-');
      const { server, store, env, slug, cacheDir } = await make(root);
      const home = join(root, 'home');
      const ref = { type: 'pack' as const, slug };

      const result = await failure(
        installPack(store, ref, {
          home,
          env,
          idleTimeoutMs: IDLE_MS,
          downloadTimeoutMs: DEADLINE_MS,
        }),
      );
      expectDeadlineRefusal(result);
      // The client dropped the connection: the store is no longer holding it.
      await expect.poll(() => server.hungUp).toBe(true);
      // No staging folder, no version, no temporary current.txt: only the lock's folder.
      expect(await listTree(home)).toEqual(['agents/', `agents/${slug}/`]);
      // No partial archive in the archive cache (its temporary copy was removed too).
      const cached = await listTree(cacheDir).catch(() => []);
      expect(cached.filter((p) => p.startsWith('archives/') && !p.endsWith('/'))).toEqual([]);

      // The lock was released: an install right after, with a lock wait far shorter than the
      // deadline, is not refused as ERR_INSTALL_LOCKED; the same store answering at once installs.
      server.mode = 'honest';
      const installed = await installPack(store, ref, {
        home,
        env,
        idleTimeoutMs: IDLE_MS,
        downloadTimeoutMs: HONEST_DEADLINE_MS,
        lockTimeoutMs: 200,
      });
      expect(installed.version).toBe('1.0.0');
      expect(await readdir(join(home, 'agents', slug))).toEqual(
        expect.arrayContaining(['1.0.0', 'current.txt']),
      );
      expect(
        (await readdir(join(home, 'agents', slug))).filter((n) => n.startsWith('.staging')),
      ).toEqual([]);
    },
  );

  it('an honest store within the default deadline installs, and its archive is cached', async () => {
    const root = await tempDir('store-client-deadline-');
    const { server, store, env, slug, cacheDir } = await staticStore(root);
    server.mode = 'honest';
    const result = await installPack(
      store,
      { type: 'pack', slug },
      { home: join(root, 'home'), env },
    );
    expect(result.version).toBe('1.0.0');
    expect((await listTree(cacheDir)).filter((p) => p.startsWith('archives/'))).toEqual([
      'archives/',
      `archives/${result.archiveSha256}.tar.gz`,
    ]);
  });

  it('a downloadTimeoutMs that is not a positive number a timer can hold is ERR_INVALID_ARGUMENT, before any lock', async () => {
    const root = await tempDir('store-client-deadline-');
    const { store, env, slug } = await staticStore(root);
    const home = join(root, 'home');
    for (const downloadTimeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31]) {
      await expect(
        installPack(store, { type: 'pack', slug }, { home, env, downloadTimeoutMs }),
      ).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
    }
    expect(await listTree(home).catch(() => [])).toEqual([]);
  });
});

describe('downloadTimeoutMs: OCI layer pulls', () => {
  const MANIFEST_TYPE = 'application/vnd.oci.image.manifest.v1+json';
  const sha256 = (b: Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

  async function registry() {
    const layer = Buffer.alloc(2000, 7);
    const manifestBytes = buildPackManifest(
      { name: 'slow', version: '1.0.0', digest: 'e'.repeat(64) },
      { digest: sha256(layer), size: layer.length },
    ).bytes;
    const server: Server = { mode: 'drip', sent: 0, hungUp: false };
    const http = await startServer((req: IncomingMessage, res: ServerResponse) => {
      if (req.url?.includes('/manifests/')) {
        return void res.writeHead(200, { 'content-type': MANIFEST_TYPE }).end(manifestBytes);
      }
      send(server, res, layer);
    });
    return { server, layer, ref: `oci://${http.url.slice('http://'.length)}/acme/slow:1.0.0` };
  }
  const anon = { plainHttp: true, credentials: false as const };

  it('a layer dripped slower than the deadline is ERR_STORE_TIMEOUT at the deadline, nothing written', async () => {
    const { server, ref } = await registry();
    const out = await tempDir('store-client-deadline-oci-');
    const result = await failure(
      pullPackArtifact(ref, {
        ...anon,
        idleTimeoutMs: IDLE_MS,
        downloadTimeoutMs: DEADLINE_MS,
        to: join(out, 'pack.tar.gz'),
      }),
    );
    expectDeadlineRefusal(result);
    await expect.poll(() => server.hungUp).toBe(true);
    expect(await readdir(out)).toEqual([]);

    server.mode = 'honest';
    const pulled = await pullPackArtifact(ref, {
      ...anon,
      idleTimeoutMs: IDLE_MS,
      downloadTimeoutMs: HONEST_DEADLINE_MS,
      to: join(out, 'pack.tar.gz'),
    });
    expect(await readdir(out)).toEqual(['pack.tar.gz']);
    expect(pulled.layer.size).toBe(2000);
  });

  it('an invalid downloadTimeoutMs is ERR_INVALID_ARGUMENT', async () => {
    const { ref } = await registry();
    const out = await tempDir('store-client-deadline-oci-');
    await expect(
      pullPackArtifact(ref, { ...anon, downloadTimeoutMs: 0, to: join(out, 'pack.tar.gz') }),
    ).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
  });
});
