import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isStoreError } from '../../src/errors.js';
import {
  buildPackManifest,
  canonicalJson,
  DEFAULT_OCI_LIMITS,
  formatOciReference,
  highestSemverTag,
  parseAuthChallenge,
  parseOciReference,
  parsePackManifest,
  readDockerCredentials,
  type PackArtifactMeta,
} from '../../src/oci/index.js';
import { tempDir } from '../helpers.js';

const code = (fn: () => unknown): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (error) {
    if (!isStoreError(error)) throw error;
    return error.code;
  }
};

describe('parseOciReference', () => {
  it.each([
    ['oci://ghcr.io/acme/reviewer:1.2.0', 'ghcr.io', 'acme/reviewer', '1.2.0', undefined],
    ['oci://localhost:5000/a/b/c', 'localhost:5000', 'a/b/c', undefined, undefined],
    ['oci://REG.example.com/x__y.z-w', 'reg.example.com', 'x__y.z-w', undefined, undefined],
    ['oci://[::1]:5000/packs/x:latest', '[::1]:5000', 'packs/x', 'latest', undefined],
    [
      `oci://127.0.0.1:5000/p@sha256:${'a'.repeat(64)}`,
      '127.0.0.1:5000',
      'p',
      undefined,
      `sha256:${'a'.repeat(64)}`,
    ],
    ['oci://r.io/p:_Tag.1-x', 'r.io', 'p', '_Tag.1-x', undefined],
  ])('%s', (input, registry, repository, tag, digest) => {
    const ref = parseOciReference(input);
    expect([ref.registry, ref.repository, ref.tag, ref.digest, ref.plainHttp]).toEqual([
      registry,
      repository,
      tag,
      digest,
      false,
    ]);
    expect(ref.baseUrl.protocol).toBe('https:');
    expect(formatOciReference(ref)).toBe(input.replace('REG.example.com', 'reg.example.com'));
  });

  it.each([
    'ghcr.io/acme/x',
    'https://ghcr.io/acme/x',
    'oci://ghcr.io',
    'oci://ghcr.io/',
    'oci:///acme/x',
    'oci://ghcr.io/Acme/x',
    'oci://ghcr.io/acme//x',
    'oci://ghcr.io/acme/x-',
    'oci://ghcr.io/acme/.x',
    'oci://ghcr.io/a___b',
    'oci://ghcr.io/acme/x:',
    'oci://ghcr.io/acme/x:.tag',
    'oci://ghcr.io/acme/x:-tag',
    `oci://ghcr.io/acme/x:${'t'.repeat(129)}`,
    'oci://ghcr.io/acme/x@sha256:abc',
    `oci://ghcr.io/acme/x@sha512:${'a'.repeat(128)}`,
    `oci://ghcr.io/acme/x@sha256:${'A'.repeat(64)}`,
    `oci://ghcr.io/acme/x:1.0@sha256:${'a'.repeat(64)}`,
    'oci://user:pw@ghcr.io/acme/x',
    'oci://ghcr.io:99999/acme/x',
    'oci://ghcr.io:0/acme/x',
    'oci://gh_cr.io/acme/x',
    'oci://ghcr.io/acme/x?y=1',
    'oci://ghcr.io/acme/x#frag',
    'oci://ghcr.io/acme/../x',
    `oci://ghcr.io/${'a'.repeat(300)}`,
  ])('refuses %s', (input) => {
    expect(code(() => parseOciReference(input))).toBe('ERR_OCI_REF_INVALID');
  });

  it("talks to Docker Hub's API host for docker.io references", () => {
    const ref = parseOciReference('oci://docker.io/acme/packs:1.0.0');
    expect(ref.registry).toBe('docker.io');
    expect(ref.baseUrl.href).toBe('https://registry-1.docker.io/');
  });

  it('allows plain HTTP for loopback registries only', () => {
    expect(parseOciReference('oci://localhost:5000/x', { plainHttp: true }).baseUrl.href).toBe(
      'http://localhost:5000/',
    );
    expect(parseOciReference('oci://127.0.0.9/x', { plainHttp: true }).baseUrl.protocol).toBe(
      'http:',
    );
    expect(parseOciReference('oci://[::1]:80/x', { plainHttp: true }).baseUrl.protocol).toBe(
      'http:',
    );
    for (const host of ['ghcr.io', '10.0.0.1:5000', 'localhost.evil.com', '127.0.0.1.nip.io']) {
      expect(code(() => parseOciReference(`oci://${host}/x`, { plainHttp: true }))).toBe(
        'ERR_OCI_PLAIN_HTTP_REFUSED',
      );
    }
  });

  it('fails only with ERR_OCI_REF_INVALID on arbitrary input, and round-trips what it accepts', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (tail) => {
        const input = `oci://${tail}`;
        const result = code(() => parseOciReference(input));
        if (result === undefined) {
          const ref = parseOciReference(input);
          expect(formatOciReference(ref)).toBe(
            `oci://${ref.registry}/${input.slice(6 + tail.indexOf('/') + 1)}`,
          );
          expect(
            () => new URL(`https://${ref.registry}/v2/${ref.repository}/tags/list`),
          ).not.toThrow();
        } else expect(result).toBe('ERR_OCI_REF_INVALID');
      }),
      { numRuns: 2000 },
    );
  });
});

describe('parseAuthChallenge', () => {
  it('reads the distribution token challenge', () => {
    expect(
      parseAuthChallenge(
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:samalba/my-app:pull,push"',
      ),
    ).toEqual({
      scheme: 'bearer',
      realm: 'https://auth.docker.io/token',
      service: 'registry.docker.io',
      scope: 'repository:samalba/my-app:pull,push',
    });
    expect(parseAuthChallenge('Basic realm="Registry Realm"')).toEqual({
      scheme: 'basic',
      realm: 'Registry Realm',
    });
    expect(parseAuthChallenge('basic')).toEqual({ scheme: 'basic' });
    // Several challenges in one header (how fetch joins repeated headers): Bearer preferred.
    expect(parseAuthChallenge('Basic realm="x", Bearer realm="https://a/t", service=reg')).toEqual({
      scheme: 'bearer',
      realm: 'https://a/t',
      service: 'reg',
    });
    expect(parseAuthChallenge('Bearer realm="https://a/t?x=\\"q\\""')).toMatchObject({
      realm: 'https://a/t?x="q"',
    });
  });

  it.each([
    '',
    '   ',
    'Bearer service="x"',
    'Bearer realm="https://a", realm="https://b"',
    'Bearer realm="https://a',
    'Bearer realm=',
    'Bearer realm="a" junk',
    'Negotiate',
    'NTLM abc=',
    'Bearer realm="a\u0001b"',
    `Bearer realm="${'a'.repeat(5000)}"`,
  ])('refuses %j', (header) => {
    expect(code(() => parseAuthChallenge(header))).toBe('ERR_OCI_AUTH_CHALLENGE_INVALID');
  });

  it('fails only with its code on arbitrary headers', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (header) => {
        const result = code(() => parseAuthChallenge(header));
        if (result !== undefined) expect(result).toBe('ERR_OCI_AUTH_CHALLENGE_INVALID');
      }),
      { numRuns: 3000 },
    );
  });
});

describe('readDockerCredentials', () => {
  const write = async (content: unknown) => {
    const dir = await tempDir();
    await writeFile(
      join(dir, 'config.json'),
      typeof content === 'string' ? content : JSON.stringify(content),
    );
    return dir;
  };
  const b64 = (s: string) => Buffer.from(s).toString('base64');

  it('reads auths entries as the Docker CLI stores them', async () => {
    const dir = await write({
      auths: {
        'https://reg.example.com/v1/': { auth: b64('u1:p:1') },
        'reg.example.com:5000': { username: 'u2', password: 'p2' },
        'https://index.docker.io/v1/': { auth: b64('hub:pw') },
        'tok.example.com': { identitytoken: 'refresh-1', username: '<token>' },
      },
      credsStore: 'desktop',
    });
    const read = (host: string) => readDockerCredentials(host, { env: { DOCKER_CONFIG: dir } });
    expect(await read('reg.example.com')).toEqual({ username: 'u1', password: 'p:1' });
    expect(await read('reg.example.com:5000')).toEqual({ username: 'u2', password: 'p2' });
    expect(await read('docker.io')).toEqual({ username: 'hub', password: 'pw' });
    expect(await read('tok.example.com')).toEqual({
      identityToken: 'refresh-1',
      username: '<token>',
    });
    expect(await read('other.example.com')).toBeUndefined();
    // HOME/.docker when DOCKER_CONFIG is unset; a missing file is anonymous.
    const home = await tempDir();
    expect(await readDockerCredentials('reg.example.com', { env: { HOME: home } })).toBeUndefined();
    await mkdir(join(home, '.docker'));
    await writeFile(
      join(home, '.docker', 'config.json'),
      JSON.stringify({ auths: { 'reg.example.com': { auth: b64('h:p') } } }),
    );
    expect(await readDockerCredentials('reg.example.com', { env: { HOME: home } })).toEqual({
      username: 'h',
      password: 'p',
    });
  });

  it('prefers the exact host:port key', async () => {
    const dir = await write({
      auths: { 'https://r.io': { auth: b64('scheme:x') }, 'r.io': { auth: b64('exact:y') } },
    });
    expect(await readDockerCredentials('r.io', { env: { DOCKER_CONFIG: dir } })).toEqual({
      username: 'exact',
      password: 'y',
    });
  });

  it.each([
    ['not JSON', '{'],
    ['an array', '[]'],
    ['auths not an object', { auths: [] }],
    ['an entry not an object', { auths: { 'r.io': 'x' } }],
    ['auth not base64', { auths: { 'r.io': { auth: '!!!!' } } }],
    [
      'auth without a colon',
      { auths: { 'r.io': { auth: Buffer.from('nocolon').toString('base64') } } },
    ],
    ['a number for a password', { auths: { 'r.io': { username: 'u', password: 5 } } }],
  ])('refuses a config with %s (never silently anonymous)', async (_why, content) => {
    const dir = await write(content);
    await expect(
      readDockerCredentials('r.io', { env: { DOCKER_CONFIG: dir } }),
    ).rejects.toMatchObject({
      code: 'ERR_OCI_DOCKER_CONFIG_INVALID',
    });
  });

  it('refuses a symlinked or oversized config.json', async () => {
    const real = await write({ auths: {} });
    const dir = await tempDir();
    await symlink(join(real, 'config.json'), join(dir, 'config.json'));
    await expect(
      readDockerCredentials('r.io', { env: { DOCKER_CONFIG: dir } }),
    ).rejects.toMatchObject({
      code: 'ERR_OCI_DOCKER_CONFIG_INVALID',
    });
    const big = await write({ auths: {}, pad: 'x'.repeat(2000) });
    await expect(
      readDockerCredentials('r.io', { env: { DOCKER_CONFIG: big }, maxBytes: 1000 }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_DOCKER_CONFIG_INVALID' });
  });
});

describe('the pack manifest', () => {
  const meta: PackArtifactMeta = { name: 'reviewer', version: '1.2.0', digest: 'a'.repeat(64) };
  const layer = { digest: `sha256:${'b'.repeat(64)}`, size: 1234 };

  it('is canonical: the same pack gives the same bytes and digest, whatever the key order', () => {
    const one = buildPackManifest(meta, layer);
    const two = buildPackManifest(
      { digest: meta.digest, version: '1.2.0', name: 'reviewer' },
      layer,
    );
    expect(two.bytes.equals(one.bytes)).toBe(true);
    expect(two.digest).toBe(one.digest);
    // A known answer: this exact serialisation is part of the format (re-push idempotence).
    expect(one.bytes.toString()).toBe(
      `{"annotations":{"dev.packwarden.pack.digest":"${'a'.repeat(64)}","org.opencontainers.image.title":"reviewer","org.opencontainers.image.version":"1.2.0"},"artifactType":"application/vnd.packwarden.pack.v1","config":{"digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","mediaType":"application/vnd.oci.empty.v1+json","size":2},"layers":[{"digest":"sha256:${'b'.repeat(64)}","mediaType":"application/vnd.packwarden.pack.layer.v1.tar+gzip","size":1234}],"mediaType":"application/vnd.oci.image.manifest.v1+json","schemaVersion":2}`,
    );
    expect(parsePackManifest(one.bytes, DEFAULT_OCI_LIMITS)).toEqual(one.manifest);
  });

  it.each([
    ['a name that is not a pack name', { ...meta, name: 'Bad Name' }],
    ['a version that is not semver', { ...meta, version: '1.2' }],
    ['a digest that is not 64 hex', { ...meta, digest: 'xyz' }],
  ])('refuses metadata with %s', (_why, bad) => {
    expect(code(() => buildPackManifest(bad, layer))).toBe('ERR_OCI_MANIFEST_INVALID');
  });

  const good = JSON.parse(buildPackManifest({ ...meta, signer: 'k1' }, layer).bytes.toString());
  const variant = (patch: (m: Record<string, unknown> & typeof good) => void) => {
    const m = structuredClone(good);
    patch(m);
    return Buffer.from(JSON.stringify(m));
  };
  it.each([
    [
      'another media type',
      variant((m) => (m.mediaType = 'application/vnd.oci.image.index.v1+json')),
    ],
    ['no artifactType', variant((m) => delete m.artifactType)],
    [
      'another artifactType',
      variant((m) => (m.artifactType = 'application/vnd.cncf.helm.config.v1+json')),
    ],
    ['schemaVersion 1', variant((m) => (m.schemaVersion = 1))],
    ['a config that is not the empty one', variant((m) => (m.config.size = 3))],
    ['two layers', variant((m) => m.layers.push(m.layers[0]))],
    ['no layers', variant((m) => (m.layers = []))],
    [
      'a layer of another media type',
      variant((m) => (m.layers[0].mediaType = 'application/vnd.oci.image.layer.v1.tar+gzip')),
    ],
    ['a layer with foreign urls', variant((m) => (m.layers[0].urls = ['https://evil.example/x']))],
    ['a sha512 layer digest', variant((m) => (m.layers[0].digest = `sha512:${'c'.repeat(128)}`))],
    ['a negative size', variant((m) => (m.layers[0].size = -1))],
    ['a fractional size', variant((m) => (m.layers[0].size = 1.5))],
    [
      'no pack digest annotation',
      variant((m) => delete m.annotations['dev.packwarden.pack.digest']),
    ],
    ['a non-string annotation', variant((m) => (m.annotations.x = 1))],
    [
      'a traversal title',
      variant((m) => (m.annotations['org.opencontainers.image.title'] = '../x')),
    ],
    ['not JSON', Buffer.from('{"schemaVersion":')],
    ['not UTF-8', Buffer.from([0x7b, 0xff, 0x7d])],
  ])('refuses a manifest with %s', (_why, bytes) => {
    expect(code(() => parsePackManifest(bytes, DEFAULT_OCI_LIMITS))).toBe(
      'ERR_OCI_MANIFEST_INVALID',
    );
  });

  it('refuses a layer larger than maxLayerBytes before downloading it', () => {
    const bytes = variant((m) => (m.layers[0].size = 2 ** 40));
    expect(code(() => parsePackManifest(bytes, DEFAULT_OCI_LIMITS))).toBe('ERR_OCI_BLOB_TOO_LARGE');
  });

  it('canonicalJson sorts keys at every depth', () => {
    expect(canonicalJson({ b: [{ d: 1, c: 'x' }], a: null })).toBe(
      '{"a":null,"b":[{"c":"x","d":1}]}',
    );
  });
});

describe('highestSemverTag', () => {
  it('takes the highest release, else the highest pre-release, ignoring other tags', () => {
    expect(highestSemverTag(['1.0.0', '1.10.0', '1.9.9', 'latest', 'v2.0.0', '3.0.0-rc.1'])).toBe(
      '1.10.0',
    );
    expect(highestSemverTag(['1.0.0-alpha', '1.0.0-beta', 'main'])).toBe('1.0.0-beta');
    expect(highestSemverTag(['latest', 'main'])).toBeUndefined();
  });
});
