// A registry (or what stands in front of one) that lies, stalls, floods or redirects: each case
// performs the attack and asserts the refusal's code and that nothing was written.
import { createHash } from 'node:crypto';
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { packArchive } from '../../src/build.js';
import {
  buildPackManifest,
  listOciTags,
  pullPackArtifact,
  pushPackArtifact,
  resolvePackArtifact,
  type PackArtifactMeta,
} from '../../src/oci/index.js';
import { tempDir, writePack } from '../helpers.js';
import { startRegistry, type RunningRegistry } from './registry.js';
import { fetchTrusting, makeLoopbackCertificate, serveTls } from './tls.js';

const MANIFEST_TYPE = 'application/vnd.oci.image.manifest.v1+json';
const sha256 = (b: Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
async function serve(handler: Handler): Promise<{ host: string; seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push({ ...req.headers, ':path': req.url ?? '', ':method': req.method ?? '' });
    handler(req, res);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { host: `127.0.0.1:${(server.address() as { port: number }).port}`, seen };
}

const anon = { plainHttp: true, credentials: false as const };
const meta: PackArtifactMeta = { name: 'evil', version: '1.0.0', digest: 'e'.repeat(64) };

/** A stand-in that serves one manifest for any tag and `layer` for its blob. */
function artifactServer(
  layer: Buffer,
  tweak: Partial<{ manifest: Buffer; header: string }> = {},
): Handler {
  const built = buildPackManifest(meta, { digest: sha256(layer), size: layer.length });
  const manifest = tweak.manifest ?? built.bytes;
  return (req, res) => {
    if (req.url?.includes('/manifests/')) {
      res.writeHead(200, {
        'content-type': MANIFEST_TYPE,
        'docker-content-digest': tweak.header ?? sha256(manifest),
      });
      res.end(manifest);
    } else if (req.url?.includes('/blobs/')) {
      res.writeHead(200).end(layer);
    } else res.writeHead(404).end();
  };
}

describe('a registry behind a proxy that tampers with manifests', () => {
  let registry: RunningRegistry;
  let layer: Buffer;
  beforeAll(async () => {
    registry = await startRegistry();
    const dir = await writePack(join(await tempDir(), 'evil'), 'evil', '1.0.0', { 'a.md': 'x' });
    const packed = await packArchive(dir);
    layer = packed.archive;
    await pushPackArtifact(
      layer,
      { ...meta, digest: packed.digest },
      `oci://${registry.host}/t/evil`,
      anon,
    );
  }, 30_000);
  afterAll(async () => {
    await registry?.stop();
  });

  /** Passes through to the real registry, rewriting manifest bodies (headers kept). */
  async function tamperingProxy(rewrite: (body: Buffer) => Buffer) {
    return serve((req, res) => {
      const upstream = httpRequest(
        `${registry.url}${req.url}`,
        { method: req.method, headers: req.headers },
        (up) => {
          if (!req.url?.includes('/manifests/')) {
            res.writeHead(up.statusCode ?? 502, up.headers);
            up.pipe(res);
            return;
          }
          const chunks: Buffer[] = [];
          up.on('data', (c: Buffer) => chunks.push(c));
          up.on('end', () => {
            const body = rewrite(Buffer.concat(chunks));
            res.writeHead(up.statusCode ?? 502, {
              ...up.headers,
              'content-length': String(body.length),
            });
            res.end(body);
          });
        },
      );
      req.pipe(upstream);
    });
  }

  it('refuses a manifest whose bytes are not the Docker-Content-Digest (tag) or the digest asked for', async () => {
    const good = await resolvePackArtifact(`oci://${registry.host}/t/evil:1.0.0`, anon);
    // Re-serialised (same meaning, other bytes): a digest check must see it.
    const proxy = await tamperingProxy((b) =>
      Buffer.from(JSON.stringify(JSON.parse(b.toString()), null, 1)),
    );
    const out = await tempDir();
    await expect(
      pullPackArtifact(`oci://${proxy.host}/t/evil:1.0.0`, { ...anon, to: join(out, 'p.tgz') }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_MANIFEST_DIGEST_MISMATCH' });
    await expect(
      pullPackArtifact(`oci://${proxy.host}/t/evil@${good.manifestDigest}`, {
        ...anon,
        to: join(out, 'p.tgz'),
      }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_MANIFEST_DIGEST_MISMATCH' });
    expect(await readdir(out)).toEqual([]);
    // No layer was asked for once the manifest was refused.
    expect(proxy.seen.filter((h) => String(h[':path']).includes('/blobs/'))).toEqual([]);
  });
});

describe('a hostile stand-in registry', () => {
  it('a manifest larger than its bound (declared or streamed) is ERR_OCI_RESPONSE_TOO_LARGE', async () => {
    const big = Buffer.alloc(64 * 1024, 0x20);
    for (const chunked of [false, true]) {
      const { host } = await serve((_req, res) => {
        res.writeHead(200, {
          'content-type': MANIFEST_TYPE,
          ...(chunked ? {} : { 'content-length': String(big.length) }),
        });
        if (chunked) {
          res.write(big.subarray(0, 1000));
          res.end(big.subarray(1000));
        } else res.end(big);
      });
      await expect(
        resolvePackArtifact(`oci://${host}/x:1`, { ...anon, limits: { maxManifestBytes: 4096 } }),
      ).rejects.toMatchObject({ code: 'ERR_OCI_RESPONSE_TOO_LARGE' });
    }
  });

  it('a registry that never answers is ERR_STORE_TIMEOUT; a layer that stalls leaves nothing behind', async () => {
    const silent = await serve(() => undefined);
    await expect(
      resolvePackArtifact(`oci://${silent.host}/x:1`, { ...anon, timeoutMs: 200 }),
    ).rejects.toMatchObject({
      code: 'ERR_STORE_TIMEOUT',
    });
    // Headers at once, then a body that trickles forever: bounded in time as a whole.
    const trickle = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': MANIFEST_TYPE });
      const drip = setInterval(() => res.write(' '), 20);
      res.on('close', () => clearInterval(drip));
    });
    await expect(
      resolvePackArtifact(`oci://${trickle.host}/x:1`, { ...anon, timeoutMs: 300 }),
    ).rejects.toMatchObject({
      code: 'ERR_STORE_TIMEOUT',
    });
    const layer = Buffer.alloc(1000, 1);
    const manifest = buildPackManifest(meta, { digest: sha256(layer), size: layer.length }).bytes;
    const stalling = await serve((req, res) => {
      if (req.url?.includes('/manifests/')) {
        res.writeHead(200, { 'content-type': MANIFEST_TYPE }).end(manifest);
      } else {
        res.writeHead(200, { 'content-length': '1000' });
        res.write(layer.subarray(0, 10));
      }
    });
    const out = await tempDir();
    await expect(
      pullPackArtifact(`oci://${stalling.host}/x:1`, {
        ...anon,
        idleTimeoutMs: 200,
        to: join(out, 'p.tgz'),
      }),
    ).rejects.toMatchObject({ code: 'ERR_STORE_TIMEOUT' });
    expect(await readdir(out)).toEqual([]);
  });

  it('an abort signal stops a pull with ERR_ABORTED', async () => {
    const silent = await serve(() => undefined);
    const controller = new AbortController();
    const pending = resolvePackArtifact(`oci://${silent.host}/x:1`, {
      ...anon,
      signal: controller.signal,
    });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ code: 'ERR_ABORTED' });
    // Aborted mid-layer: nothing written.
    const layer = Buffer.alloc(1000, 1);
    const manifest = buildPackManifest(meta, { digest: sha256(layer), size: layer.length }).bytes;
    const midway = new AbortController();
    const { host } = await serve((req, res) => {
      if (req.url?.includes('/manifests/')) {
        res.writeHead(200, { 'content-type': MANIFEST_TYPE }).end(manifest);
        return;
      }
      res.writeHead(200, { 'content-length': '1000' });
      res.write(layer.subarray(0, 10), () => midway.abort());
    });
    const out = await tempDir();
    await expect(
      pullPackArtifact(`oci://${host}/x:1`, {
        ...anon,
        signal: midway.signal,
        to: join(out, 'p.tgz'),
      }),
    ).rejects.toMatchObject({ code: 'ERR_ABORTED' });
    expect(await readdir(out)).toEqual([]);
  });

  it('a layer longer than its descriptor stops at the first extra byte', async () => {
    const layer = Buffer.alloc(100, 7);
    const manifest = buildPackManifest(meta, { digest: sha256(layer), size: layer.length }).bytes;
    let sent = 0;
    const { host } = await serve((req, res) => {
      if (req.url?.includes('/manifests/')) {
        res.writeHead(200, { 'content-type': MANIFEST_TYPE }).end(manifest);
        return;
      }
      // An endless body: the client must hang up, not fill the disk.
      res.writeHead(200);
      const pump = () => {
        while (sent < 50 * 1024 * 1024 && res.write(Buffer.alloc(64 * 1024, 7))) sent += 64 * 1024;
        if (sent < 50 * 1024 * 1024) res.once('drain', pump);
        else res.end();
      };
      res.on('close', () => undefined);
      pump();
    });
    const out = await tempDir();
    await expect(
      pullPackArtifact(`oci://${host}/x:1`, { ...anon, to: join(out, 'p.tgz') }),
    ).rejects.toMatchObject({
      code: 'ERR_OCI_BLOB_SIZE_MISMATCH',
    });
    expect(await readdir(out)).toEqual([]);
    expect(sent).toBeLessThan(50 * 1024 * 1024);
  });

  it('a layer sent with a Content-Encoding is judged as the bytes that arrive, and refused', async () => {
    const layer = Buffer.alloc(4000, 3);
    const manifest = buildPackManifest(meta, { digest: sha256(layer), size: layer.length }).bytes;
    const seenEncodings: (string | undefined)[] = [];
    const { host } = await serve((req, res) => {
      if (req.url?.includes('/manifests/')) {
        res.writeHead(200, { 'content-type': MANIFEST_TYPE }).end(manifest);
        return;
      }
      seenEncodings.push(req.headers['accept-encoding']);
      // A gzip body that fetch would transparently decode to other bytes than the layer.
      res.writeHead(200, { 'content-encoding': 'gzip' }).end(gzipSync(Buffer.alloc(4000, 4)));
    });
    const out = await tempDir();
    await expect(
      pullPackArtifact(`oci://${host}/x:1`, { ...anon, to: join(out, 'p.tgz') }),
    ).rejects.toMatchObject({
      code: 'ERR_OCI_BLOB_DIGEST_MISMATCH',
    });
    expect(seenEncodings).toEqual(['identity']);
    expect(await readdir(out)).toEqual([]);
  });

  it('refuses redirects to plain HTTP off loopback, redirect loops, and redirects without Location', async () => {
    const layer = Buffer.alloc(10, 1);
    const base = artifactServer(layer);
    const out = await tempDir();
    for (const [location, codeWanted] of [
      ['http://example.com/blob', 'ERR_STORE_URL_INVALID'],
      ['file:///etc/passwd', 'ERR_STORE_URL_INVALID'],
      ['/v2/x/blobs/again', 'ERR_STORE_REDIRECT'],
      ['', 'ERR_STORE_REDIRECT'],
    ] as const) {
      const { host } = await serve((req, res) => {
        if (req.url?.includes('/blobs/')) res.writeHead(302, location ? { location } : {}).end();
        else base(req, res);
      });
      await expect(
        pullPackArtifact(`oci://${host}/x:1`, { ...anon, to: join(out, 'p.tgz') }),
      ).rejects.toMatchObject({
        code: codeWanted,
      });
    }
    expect(await readdir(out)).toEqual([]);
  });

  it('the tag list: Link loops, links to another origin, floods and non-tags are ERR_OCI_TAGS_INVALID', async () => {
    const cases: [string, Handler][] = [
      [
        'loop',
        (req, res) =>
          res
            .writeHead(200, {
              link: `<${req.url}>; rel="next"`,
              'content-type': 'application/json',
            })
            .end('{"name":"x","tags":["1.0.0"]}'),
      ],
      [
        'elsewhere',
        (_req, res) =>
          res
            .writeHead(200, { link: '<https://evil.example/v2/x/tags/list?last=a>; rel="next"' })
            .end('{"name":"x","tags":["1.0.0"]}'),
      ],
      [
        'flood',
        (_req, res) =>
          res
            .writeHead(200)
            .end(
              JSON.stringify({ name: 'x', tags: Array.from({ length: 50 }, (_, i) => `t${i}`) }),
            ),
      ],
      ['not tags', (_req, res) => res.writeHead(200).end('{"name":"x","tags":["../../etc"]}')],
      ['not a list', (_req, res) => res.writeHead(200).end('{"name":"x","tags":"1.0.0"}')],
      ['not JSON', (_req, res) => res.writeHead(200).end('<html>')],
    ];
    for (const [, handler] of cases) {
      const { host } = await serve(handler);
      await expect(
        listOciTags(`oci://${host}/x`, { ...anon, limits: { maxTags: 20 } }),
      ).rejects.toMatchObject({
        code: 'ERR_OCI_TAGS_INVALID',
      });
    }
    // Pagination that ends: every page read, in order.
    let page = 0;
    const { host } = await serve((_req, res) => {
      page++;
      if (page === 1)
        res
          .writeHead(200, { link: '</v2/x/tags/list?n=2&last=b>; rel="next"' })
          .end('{"name":"x","tags":["a","b"]}');
      else res.writeHead(200).end('{"name":"x","tags":["c"]}');
    });
    expect(await listOciTags(`oci://${host}/x`, anon)).toEqual(['a', 'b', 'c']);
    // No semver tag at all.
    await expect(resolvePackArtifact(`oci://${host}/x`, anon)).rejects.toMatchObject({
      code: 'ERR_OCI_NO_SEMVER_TAG',
    });
  });

  it('push refuses an upload moved to another origin, sending it nothing', async () => {
    const other = await serve((_req, res) => res.writeHead(202).end());
    const { host } = await serve((req, res) => {
      if (req.method === 'HEAD') res.writeHead(404).end();
      else if (req.method === 'POST')
        res.writeHead(202, { location: `http://${other.host}/upload/1` }).end();
      else res.writeHead(500).end();
    });
    await expect(
      pushPackArtifact(Buffer.from('archive'), meta, `oci://${host}/x`, {
        plainHttp: true,
        credentials: { username: 'u', password: 'p' },
      }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_UPLOAD_FAILED' });
    expect(other.seen).toEqual([]);
  });

  it('push refuses a registry that reports another digest for what it stored', async () => {
    const { host } = await serve((req, res) => {
      if (req.method === 'HEAD') res.writeHead(200).end();
      else if (req.method === 'PUT')
        res.writeHead(201, { 'docker-content-digest': `sha256:${'0'.repeat(64)}` }).end();
      else res.writeHead(500).end();
    });
    await expect(
      pushPackArtifact(Buffer.from('archive'), meta, `oci://${host}/x`, anon),
    ).rejects.toMatchObject({
      code: 'ERR_OCI_UPLOAD_FAILED',
    });
  });

  it('auth: malformed challenges, unusable tokens, oversized token answers, realms off policy', async () => {
    const challenge =
      (header: string): Handler =>
      (_req, res) =>
        res.writeHead(401, { 'www-authenticate': header }).end();
    for (const header of [
      'Bearer service="x"',
      'Negotiate abc',
      'Bearer realm="https://a',
      'Bearer realm="ftp://x/token"',
    ]) {
      const { host } = await serve(challenge(header));
      const error = await resolvePackArtifact(`oci://${host}/x:1`, anon).catch((e: unknown) => e);
      expect(['ERR_OCI_AUTH_CHALLENGE_INVALID', 'ERR_STORE_URL_INVALID']).toContain(
        (error as { code?: string }).code,
      );
    }
    // A realm on plain HTTP off loopback never gets asked (credentials would travel in clear).
    const { host: clear } = await serve(
      challenge('Bearer realm="http://example.com/token",service="s"'),
    );
    await expect(
      resolvePackArtifact(`oci://${clear}/x:1`, {
        plainHttp: true,
        credentials: { username: 'u', password: 'p' },
      }),
    ).rejects.toMatchObject({ code: 'ERR_STORE_URL_INVALID' });

    for (const [body, codeWanted] of [
      ['{"token":""}', 'ERR_OCI_TOKEN_FAILED'],
      ['{"token":"a\\r\\nx-injected: 1"}', 'ERR_OCI_TOKEN_FAILED'],
      ['not json', 'ERR_OCI_TOKEN_FAILED'],
      [JSON.stringify({ token: 'x'.repeat(5000) }), 'ERR_OCI_RESPONSE_TOO_LARGE'],
    ] as const) {
      const realm = await serve((_req, res) => res.writeHead(200).end(body));
      const { host } = await serve(
        challenge(`Bearer realm="http://${realm.host}/token",service="s"`),
      );
      await expect(
        resolvePackArtifact(`oci://${host}/x:1`, {
          ...anon,
          limits: { maxTokenResponseBytes: 4096 },
        }),
      ).rejects.toMatchObject({ code: codeWanted });
    }
  });

  it('an https registry cannot send the credentials to a plain-HTTP realm, not even on loopback', async () => {
    const tls = makeLoopbackCertificate(await tempDir());
    const tlsFetch = fetchTrusting(tls.cert);
    const credentials = { username: 'u', password: 'p' };
    const asking = (realm: string) => (req: IncomingMessage, res: ServerResponse) => {
      if (req.headers.authorization === 'Bearer t0k3n')
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"errors":[]}');
      else res.writeHead(401, { 'www-authenticate': `Bearer realm="${realm}",service="s"` }).end();
    };
    const clearRealm = await serve((_req, res) => res.writeHead(200).end('{"token":"t0k3n"}'));
    const downgrading = await serveTls(tls, asking(`http://${clearRealm.host}/token`));
    servers.push(downgrading.server);
    await expect(
      resolvePackArtifact(`oci://${downgrading.host}/x:1`, { credentials, fetch: tlsFetch }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_AUTH_CHALLENGE_INVALID' });
    expect(clearRealm.seen).toEqual([]);

    // The same registry naming an https realm: the realm is asked, with the credentials.
    const seen: (string | undefined)[] = [];
    const tlsRealm = await serveTls(tls, (req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(200).end('{"token":"t0k3n"}');
    });
    servers.push(tlsRealm.server);
    const registry = await serveTls(tls, asking(`https://${tlsRealm.host}/token`));
    servers.push(registry.server);
    await expect(
      resolvePackArtifact(`oci://${registry.host}/x:1`, { credentials, fetch: tlsFetch }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_NOT_FOUND' });
    expect(seen).toEqual([`Basic ${Buffer.from('u:p').toString('base64')}`]);
  });

  it('a registry that keeps refusing a valid token is ERR_OCI_AUTH_FAILED after one retry', async () => {
    const realm = await serve((_req, res) => res.writeHead(200).end('{"token":"t0k3n"}'));
    const registry = await serve((_req, res) =>
      res
        .writeHead(401, {
          'www-authenticate': `Bearer realm="http://${realm.host}/token",service="s",scope="repository:x:pull"`,
        })
        .end(),
    );
    const error = await resolvePackArtifact(`oci://${registry.host}/x:1`, anon).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'ERR_OCI_AUTH_FAILED' });
    expect(String((error as Error).message)).not.toContain('t0k3n');
    expect(registry.seen).toHaveLength(2);
    expect(registry.seen[1]!.authorization).toBe('Bearer t0k3n');
  });

  it('a manifest that is not an OCI image manifest (by Content-Type) is refused before parsing', async () => {
    const { host } = await serve((_req, res) =>
      res
        .writeHead(200, { 'content-type': 'application/vnd.docker.distribution.manifest.v2+json' })
        .end('{}'),
    );
    await expect(resolvePackArtifact(`oci://${host}/x:1`, anon)).rejects.toMatchObject({
      code: 'ERR_OCI_MANIFEST_INVALID',
    });
  });
});
