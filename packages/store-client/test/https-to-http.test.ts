import { readFile } from 'node:fs/promises';
import type { Server } from 'node:https';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { buildStaticStore, installPack, isStoreError, openStore } from '../src/index.js';
import { listTree, makeTar, manifest, startServer, tempDir, writePack } from './helpers.js';
import { fetchTrusting, makeLoopbackCertificate, serveTls } from './oci/tls.js';

// The https-or-loopback rule let a store read over https send the client on to plain http on
// 127.0.0.1: an index listing `http://127.0.0.1:PORT/…` archives, or a GitHub API answering with
// a redirect there. Any store could then make every client GET whatever listens on the client's
// own loopback (a local admin port, another user's server) and take its answer as the artifact.
// Like the OCI client's redirects, an https document or hop may no longer lead to plain http.

const tlsServers: Server[] = [];
afterEach(async () => {
  for (const server of tlsServers.splice(0)) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

async function refusal(promise: Promise<unknown>): Promise<{ code?: string; message: string }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isStoreError(error), String(error)).toBe(true);
  return error as { code: string; message: string };
}

describe('a store read over https cannot send the client to plain http', () => {
  it('a static index listing a plain-http loopback archive: ERR_STORE_URL_INVALID, nothing fetched', async () => {
    const root = await tempDir('store-client-downgrade-');
    await writePack(join(root, 'packs', 'demo'), 'demo', '1.0.0');
    const out = join(root, 'store');
    const built = await buildStaticStore(join(root, 'packs'), { out });
    const archive = await readFile(join(out, built.packs[0]!.archive));
    // The "local service": it serves the very archive the index describes, so only the scheme
    // rule stands between the client and installing what it sends.
    const local = await startServer((_req, res) => void res.end(archive));
    const index = JSON.parse(await readFile(join(out, 'index.json'), 'utf8'));
    index.artifacts[0].versions[0].archive = `${local.url}/demo-1.0.0.tar.gz`;
    const tls = makeLoopbackCertificate(await tempDir());
    const remote = await serveTls(tls, (_req, res) => void res.end(JSON.stringify(index)));
    tlsServers.push(remote.server);
    const store = await openStore({
      url: `https://${remote.host}/index.json`,
      fetch: fetchTrusting(tls.cert),
      env: {},
      cacheDir: false,
    });
    const home = join(root, 'home');
    const error = await refusal(installPack(store, { type: 'pack', slug: 'demo' }, { home }));
    expect(error.code, error.message).toBe('ERR_STORE_URL_INVALID');
    expect(local.requests).toHaveLength(0);
    expect(await listTree(home).catch(() => [])).toEqual([]);
  });

  it('an https GitHub API redirecting a tarball to plain-http loopback: ERR_STORE_URL_INVALID, nothing fetched', async () => {
    const tarball = gzipSync(
      await makeTar([
        { name: 'acme-store-1234567/', type: 'directory' },
        { name: 'acme-store-1234567/agent-packs/demo/', type: 'directory' },
        {
          name: 'acme-store-1234567/agent-packs/demo/agent.yaml',
          content: manifest('demo', '1.0.0'),
        },
      ]),
    );
    const local = await startServer((_req, res) => void res.end(tarball));
    const tls = makeLoopbackCertificate(await tempDir());
    const api = await serveTls(tls, (_req, res) =>
      res.writeHead(302, { location: `${local.url}/codeload/demo.tar.gz` }).end(),
    );
    tlsServers.push(api.server);
    const index = {
      version: 1,
      artifacts: [{ type: 'pack', slug: 'demo', latestVersion: '1.0.0' }],
    };
    const raw = await startServer((_req, res) => void res.end(JSON.stringify(index)));
    const store = await openStore({
      url: `${raw.url}/store-index.json`,
      githubApiUrl: `https://${api.host}`,
      repo: 'acme/store',
      fetch: fetchTrusting(tls.cert),
      env: {},
      cacheDir: false,
    });
    const home = await tempDir();
    const error = await refusal(installPack(store, { type: 'pack', slug: 'demo' }, { home }));
    expect(error.code, error.message).toBe('ERR_STORE_URL_INVALID');
    expect(local.requests).toHaveLength(0);
    // Refused at the hop, after the lock was taken: no lock, staging folder or version left.
    expect(await listTree(join(home, 'agents', 'demo'))).toEqual([]);
  });
});
