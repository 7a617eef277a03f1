import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPackTrustRoot, selectTrustedKey, type PackTrustRoot } from '../src/index.js';
import { json, startKeyServer, status, type KeyServer } from './helpers/key-server.js';
import { clock, forbiddenFetch, jwks, makeKey, tempDir, type TestKey } from './helpers/keys.js';

let alpha: TestKey;
let beta: TestKey;
let server: KeyServer;

beforeAll(async () => {
  [alpha, beta] = await Promise.all([makeKey('alpha'), makeKey('beta')]);
  server = await startKeyServer();
});
afterAll(() => server.close());

function code(root: PackTrustRoot): string | undefined {
  return root.status === 'unavailable' ? root.code : undefined;
}

describe('control-plane lease (PACKWARDEN_LEASE_URL → GET <origin>/api/keys)', () => {
  it('reads a list of {kid, publicPem} from <origin>/api/keys, whatever the lease URL path', async () => {
    server.route(
      '/api/keys',
      json([
        { kid: 'alpha', publicPem: alpha.pem, notAfter: '2030-01-01T00:00:00Z' },
        { kid: 'beta', publicPem: beta.pem },
      ]),
    );
    const before = server.count('/api/keys');
    const root = await loadPackTrustRoot({
      env: { PACKWARDEN_LEASE_URL: `${server.origin}/v1/lease/abc?token=x` },
      cacheDir: false,
    });
    expect(root.status).toBe('ok');
    expect(root.source).toEqual({
      kind: 'lease',
      configuredBy: 'env',
      variable: 'PACKWARDEN_LEASE_URL',
      url: server.url('/api/keys'),
    });
    expect(root.keys.map((key) => [key.kid, key.thumbprint])).toEqual([
      ['alpha', alpha.thumbprint],
      ['beta', beta.thumbprint],
    ]);
    expect(root.keys[0]?.notAfter?.toISOString()).toBe('2030-01-01T00:00:00.000Z');
    expect(server.count('/api/keys')).toBe(before + 1);
    expect(server.requests.at(-1)?.method).toBe('GET');
  });

  it('reads a JWKS from /api/keys, through AGENTHIPPO_LEASE_URL', async () => {
    server.route('/api/keys', json(jwks(beta)));
    const root = await loadPackTrustRoot({
      env: { AGENTHIPPO_LEASE_URL: server.origin },
      cacheDir: false,
    });
    expect(root.keys.map((key) => key.kid)).toEqual(['beta']);
    expect(root.source.variable).toBe('AGENTHIPPO_LEASE_URL');
  });

  it('drops a private or broken PEM with a warning and keeps the rest', async () => {
    const privatePem = alpha.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    server.route(
      '/api/keys',
      json([
        { kid: 'leak', publicPem: privatePem },
        { kid: 'broken', publicPem: 'x' },
        { kid: 'beta', publicPem: beta.pem },
        { nokid: true },
      ]),
    );
    const root = await loadPackTrustRoot({ leaseUrl: server.origin, env: {}, cacheDir: false });
    expect(root.keys.map((key) => key.kid)).toEqual(['beta']);
    expect(root.rejectedKeys.map((key) => [key.kid, key.reason])).toEqual([
      ['leak', 'private-key'],
      ['broken', 'invalid-key'],
      [undefined, 'invalid-key'],
    ]);
    expect(root.warnings).toHaveLength(3);
  });

  it.each([
    [
      'a list',
      () => [
        { kid: 'alpha', publicPem: alpha.pem },
        { kid: 'alpha', revoked: true },
        { kid: 'beta', publicPem: beta.pem },
      ],
    ],
    ['a JWKS (the same rule)', () => jwks(alpha, { kid: 'alpha', revoked: true }, beta)],
  ])(
    'in %s, an unreadable second entry for a kid (a revocation without publicPem) makes it ambiguous',
    async (_shape, body) => {
      server.route('/api/keys', json(body()));
      const root = await loadPackTrustRoot({ leaseUrl: server.origin, env: {}, cacheDir: false });
      const at = new Date('2026-09-01T00:00:00Z');
      expect(selectTrustedKey(root, 'alpha', { at })).toMatchObject({
        kind: 'untrusted-key',
        reason: 'ambiguous-kid',
      });
      expect(selectTrustedKey(root, 'beta', { at }).kind).toBe('ok');
      expect(root.warnings.join('\n')).toMatch(/lists kid "alpha" 2 times/);
    },
  );

  it('applies pins to the control plane too', async () => {
    server.route(
      '/api/keys',
      json([
        { kid: 'alpha', publicPem: alpha.pem },
        { kid: 'beta', publicPem: beta.pem },
      ]),
    );
    const root = await loadPackTrustRoot({
      leaseUrl: server.origin,
      pins: [alpha.thumbprint],
      env: {},
      cacheDir: false,
    });
    expect(root.keys.map((key) => key.kid)).toEqual(['alpha']);
  });

  it('serves a stale lease key set on 5xx within the bound', async () => {
    const dir = await tempDir();
    try {
      const time = clock();
      server.route('/api/keys', json([{ kid: 'alpha', publicPem: alpha.pem }]));
      const options = { leaseUrl: server.origin, env: {}, cacheDir: dir.path, now: time.now };
      expect((await loadPackTrustRoot(options)).status).toBe('ok');
      server.route('/api/keys', status(502));
      time.advance(60 * 60_000);
      const root = await loadPackTrustRoot(options);
      expect(root.stale).toBe(true);
      expect(root.keys.map((key) => key.kid)).toEqual(['alpha']);
    } finally {
      await dir.cleanup();
    }
  });

  it('refuses a plain-HTTP lease URL that is not loopback, without a request', async () => {
    const net = forbiddenFetch();
    const root = await loadPackTrustRoot({
      env: { PACKWARDEN_LEASE_URL: 'http://control-plane.internal' },
      fetch: net.fetch,
      cacheDir: false,
    });
    expect(code(root)).toBe('ERR_URL_INSECURE');
    expect(net.calls()).toBe(0);
  });

  it('is unavailable on a body that is neither shape', async () => {
    server.route('/api/keys', json({ keys: 'nope' }));
    const root = await loadPackTrustRoot({ leaseUrl: server.origin, env: {}, cacheDir: false });
    expect(code(root)).toBe('ERR_KEYS_PARSE');
  });
});
