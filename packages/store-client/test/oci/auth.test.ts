import { createHash } from 'node:crypto';
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type Server,
} from 'node:http';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packArchive } from '../../src/build.js';
import { pullPackArtifact, pushPackArtifact, type PackArtifactMeta } from '../../src/oci/index.js';
import { tempDir, writePack } from '../helpers.js';
import {
  basicAuth,
  startRegistry,
  startTokenServer,
  writeDockerConfig,
  type RunningRegistry,
  type TokenServer,
} from './registry.js';

const sha256 = (b: Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

async function makePack(name: string, version: string) {
  const dir = await writePack(join(await tempDir(), name), name, version, { 'x.md': name });
  const { archive, digest } = await packArchive(dir);
  const meta: PackArtifactMeta = { name, version, digest };
  return { archive, meta };
}

describe('htpasswd (Basic) auth against the real registry', () => {
  let registry: RunningRegistry;
  beforeAll(async () => {
    registry = await startRegistry({ kind: 'htpasswd', users: { alice: 's3cret:with:colons' } });
  }, 30_000);
  afterAll(async () => {
    await registry?.stop();
  });

  it('pushes and pulls with the Docker config.json auths entry (auth = base64 user:password)', async () => {
    const { archive, meta } = await makePack('basic', '1.0.0');
    const dockerConfigDir = await writeDockerConfig(await tempDir(), {
      [`http://${registry.host}`]: { auth: basicAuth('alice', 's3cret:with:colons') },
    });
    const opts = { plainHttp: true, env: { DOCKER_CONFIG: dockerConfigDir } };
    const ref = `oci://${registry.host}/team/basic`;
    const pushed = await pushPackArtifact(archive, meta, ref, opts);
    const out = await tempDir();
    const pulled = await pullPackArtifact(`${ref}:1.0.0`, { ...opts, to: join(out, 'p.tgz') });
    expect(pulled.manifestDigest).toBe(pushed.manifestDigest);
    expect((await readFile(pulled.file)).equals(archive)).toBe(true);
    // username/password fields work too, and explicit credentials win over the file.
    const again = await pullPackArtifact(`${ref}:1.0.0`, {
      plainHttp: true,
      credentials: { username: 'alice', password: 's3cret:with:colons' },
      to: join(out, 'q.tgz'),
    });
    expect(again.layer.digest).toBe(sha256(archive));
  });

  it('refuses without credentials and with a wrong password, writing nothing', async () => {
    const out = await tempDir();
    const ref = `oci://${registry.host}/team/basic:1.0.0`;
    await expect(
      pullPackArtifact(ref, { plainHttp: true, credentials: false, to: join(out, 'x') }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_AUTH_FAILED' });
    const dockerConfigDir = await writeDockerConfig(await tempDir(), {
      [registry.host]: { username: 'alice', password: 'wrong' },
    });
    const refused = pullPackArtifact(ref, {
      plainHttp: true,
      env: { DOCKER_CONFIG: dockerConfigDir },
      to: join(out, 'x'),
    });
    await expect(refused).rejects.toMatchObject({ code: 'ERR_OCI_AUTH_FAILED' });
    await expect(refused).rejects.not.toThrow(/wrong/);
    const { archive, meta } = await makePack('denied', '1.0.0');
    await expect(
      pushPackArtifact(archive, meta, `oci://${registry.host}/team/denied`, {
        plainHttp: true,
        credentials: false,
      }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_AUTH_FAILED' });
    expect(await readdir(out)).toEqual([]);
    // Nothing reached the registry's storage for the refused push.
    const catalog = await fetch(`${registry.url}/v2/_catalog`, {
      headers: { authorization: `Basic ${basicAuth('alice', 's3cret:with:colons')}` },
    });
    expect(((await catalog.json()) as { repositories: string[] }).repositories).not.toContain(
      'team/denied',
    );
  });

  it('never sends the credentials along a redirect to another origin', async () => {
    const { archive, meta } = await makePack('redirected', '1.0.0');
    const creds = { username: 'alice', password: 's3cret:with:colons' };
    const pushed = await pushPackArtifact(archive, meta, `oci://${registry.host}/team/redirected`, {
      plainHttp: true,
      credentials: creds,
    });
    // "Object storage": another origin (localhost, not 127.0.0.1) that serves the blob and
    // records the headers it was sent.
    const seen: IncomingHttpHeaders[] = [];
    let servedBytes = archive;
    const storage: Server = createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(servedBytes);
    });
    await new Promise<void>((r) => storage.listen(0, '127.0.0.1', r));
    const storagePort = (storage.address() as { port: number }).port;
    // A stand-in in front of the real registry: passes everything through, except blob GETs
    // of the layer, which it redirects to the storage origin, as registries on S3 do.
    const proxied: IncomingHttpHeaders[] = [];
    const proxy: Server = createServer((req, res) => {
      proxied.push(req.headers);
      if (req.method === 'GET' && req.url === `/v2/team/redirected/blobs/${pushed.layer.digest}`) {
        res.writeHead(307, { location: `http://localhost:${storagePort}/blob?sig=abc` }).end();
        return;
      }
      const upstream = httpRequest(
        `${registry.url}${req.url}`,
        { method: req.method, headers: req.headers },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      req.pipe(upstream);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const proxyHost = `127.0.0.1:${(proxy.address() as { port: number }).port}`;
    try {
      const out = await tempDir();
      const pulled = await pullPackArtifact(`oci://${proxyHost}/team/redirected:1.0.0`, {
        plainHttp: true,
        credentials: creds,
        to: join(out, 'p.tgz'),
      });
      expect((await readFile(pulled.file)).equals(archive)).toBe(true);
      expect(seen).toHaveLength(1);
      expect(seen[0]!.authorization).toBeUndefined();
      // The registry's origin did get them: the redirect is what dropped them.
      expect(proxied.some((h) => h.authorization?.startsWith('Basic '))).toBe(true);

      // And what the other origin serves is checked like anything else.
      servedBytes = Buffer.concat([archive.subarray(0, 20), Buffer.alloc(archive.length - 20)]);
      await expect(
        pullPackArtifact(`oci://${proxyHost}/team/redirected:1.0.0`, {
          plainHttp: true,
          credentials: creds,
          to: join(out, 'q.tgz'),
        }),
      ).rejects.toMatchObject({ code: 'ERR_OCI_BLOB_DIGEST_MISMATCH' });
      expect(await readdir(out)).toEqual(['p.tgz']);
    } finally {
      proxy.closeAllConnections();
      storage.closeAllConnections();
      await new Promise((r) => proxy.close(r));
      await new Promise((r) => storage.close(r));
    }
  });
});

describe('token auth (distribution token flow) against the real registry', () => {
  let tokens: TokenServer;
  let registry: RunningRegistry;
  beforeAll(async () => {
    tokens = await startTokenServer({
      users: { bob: 'hunter2' },
      refreshTokens: { 'refresh-abc': 'bob' },
    });
    registry = await startRegistry({
      kind: 'token',
      realm: tokens.realm,
      service: tokens.service,
      issuer: tokens.issuer,
      certPem: tokens.certPem,
    });
  }, 30_000);
  afterAll(async () => {
    await registry?.stop();
    await tokens?.stop();
  });

  it('gets a token from the realm with Basic credentials, then pushes and pulls', async () => {
    const { archive, meta } = await makePack('tokened', '2.0.0');
    const dockerConfigDir = await writeDockerConfig(await tempDir(), {
      [registry.host]: { auth: basicAuth('bob', 'hunter2') },
    });
    const opts = { plainHttp: true, env: { DOCKER_CONFIG: dockerConfigDir } };
    const before = tokens.requests.length;
    const pushed = await pushPackArtifact(
      archive,
      meta,
      `oci://${registry.host}/org/tokened`,
      opts,
    );
    const out = await tempDir();
    const pulled = await pullPackArtifact(
      `oci://${registry.host}/org/tokened@${pushed.manifestDigest}`,
      {
        ...opts,
        to: join(out, 'p.tgz'),
      },
    );
    expect((await readFile(pulled.file)).equals(archive)).toBe(true);
    const used = tokens.requests.slice(before);
    expect(used.length).toBeGreaterThan(0);
    expect(used.every((r) => r.user === 'bob')).toBe(true);
    expect(used.some((r) => r.scopes.some((s) => s === 'repository:org/tokened:pull,push'))).toBe(
      true,
    );
    // Tokens are cached per scope: not one token request per registry request.
    expect(used.length).toBeLessThanOrEqual(3);
  });

  it('keeps a token for its expires_in on the injected clock, then fetches a new one', async () => {
    const { archive, meta } = await makePack('clocked', '1.0.0');
    const credentials = { username: 'bob', password: 'hunter2' };
    await pushPackArtifact(archive, meta, `oci://${registry.host}/org/clocked`, {
      plainHttp: true,
      credentials,
    });
    const pull = async (advanceAfterManifestMs: number) => {
      let clock = 1_000_000;
      const before = tokens.requests.length;
      const out = await tempDir();
      await pullPackArtifact(`oci://${registry.host}/org/clocked:1.0.0`, {
        plainHttp: true,
        credentials,
        to: join(out, 'p.tgz'),
        now: () => clock,
        // The clock moves once the manifest has been read, before the layer is asked for.
        fetch: async (input, init) => {
          const response = await fetch(input, init);
          if (String(input).includes('/manifests/') && response.status === 200)
            clock += advanceAfterManifestMs;
          return response;
        },
      });
      return tokens.requests.length - before;
    };
    // The token server grants 300 s: within it one token serves manifest and layer...
    expect(await pull(60_000)).toBe(1);
    // ...past it, the layer request gets a fresh token first.
    expect(await pull(600_000)).toBe(2);
  });

  it('uses a config.json identitytoken as an OAuth2 refresh token (POST to the realm)', async () => {
    const { archive, meta } = await makePack('refreshed', '1.0.0');
    const dockerConfigDir = await writeDockerConfig(await tempDir(), {
      [registry.host]: { identitytoken: 'refresh-abc' },
    });
    const before = tokens.requests.length;
    const pushed = await pushPackArtifact(archive, meta, `oci://${registry.host}/org/refreshed`, {
      plainHttp: true,
      env: { DOCKER_CONFIG: dockerConfigDir },
    });
    expect(pushed.tag).toBe('1.0.0');
    const used = tokens.requests.slice(before);
    expect(
      used.every((r) => r.method === 'POST' && r.grant === 'refresh_token' && r.user === 'bob'),
    ).toBe(true);
  });

  it('refuses when the token service refuses (anonymous, wrong password), writing nothing', async () => {
    const out = await tempDir();
    await expect(
      pullPackArtifact(`oci://${registry.host}/org/tokened:2.0.0`, {
        plainHttp: true,
        credentials: false,
        to: join(out, 'x'),
      }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_TOKEN_FAILED' });
    await expect(
      pullPackArtifact(`oci://${registry.host}/org/tokened:2.0.0`, {
        plainHttp: true,
        credentials: { username: 'bob', password: 'nope' },
        to: join(out, 'x'),
      }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_TOKEN_FAILED' });
    expect(await readdir(out)).toEqual([]);
  });
});
