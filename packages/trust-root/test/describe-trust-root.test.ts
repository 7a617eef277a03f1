import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeMissingTrustRoot, describeTrustRoot, loadPackTrustRoot } from '../src/index.js';
import { json, startKeyServer, type KeyServer } from './helpers/key-server.js';
import { clock, jwks, makeKey, tempDir, type TempDir, type TestKey } from './helpers/keys.js';

let alpha: TestKey;
let beta: TestKey;
let server: KeyServer;
let dir: TempDir;

beforeAll(async () => {
  [alpha, beta] = await Promise.all([makeKey('alpha'), makeKey('beta')]);
  server = await startKeyServer();
  server.route(
    '/jwks.json',
    json(jwks({ ...alpha.jwk, notBefore: '2026-01-01T00:00:00Z', revoked: true }, beta), {
      'cache-control': 'max-age=600',
    }),
  );
  dir = await tempDir();
});
afterAll(async () => {
  await server.close();
  await dir.cleanup();
});

describe('describeTrustRoot', () => {
  it('summarises an ok remote root as plain JSON', async () => {
    const time = clock(new Date('2026-09-01T12:00:00Z'));
    const root = await loadPackTrustRoot({
      jwksUrl: server.url('/jwks.json'),
      pins: [alpha.thumbprint],
      env: {},
      cacheDir: dir.path,
      now: time.now,
    });
    const description = describeTrustRoot(root);
    expect(JSON.parse(JSON.stringify(description))).toEqual(description);
    expect(description).toEqual({
      version: 1,
      status: 'ok',
      source: {
        kind: 'jwks',
        configuredBy: 'option',
        url: server.url('/jwks.json'),
        pins: [alpha.thumbprint],
      },
      reason: null,
      code: null,
      retryable: null,
      stale: false,
      delivery: 'network',
      fetchedAt: '2026-09-01T12:00:00.000Z',
      validatedAt: '2026-09-01T12:00:00.000Z',
      expiresAt: '2026-09-01T12:10:00.000Z',
      keys: [
        {
          kid: 'alpha',
          thumbprint: alpha.thumbprint,
          alg: 'ES256',
          crv: 'P-256',
          notBefore: '2026-01-01T00:00:00.000Z',
          notAfter: null,
          revoked: true,
        },
      ],
      rejectedKeys: [
        {
          kid: 'beta',
          thumbprint: beta.thumbprint,
          reason: 'not-pinned',
          message: `key "beta" (${beta.thumbprint}) is not pinned`,
        },
      ],
      warnings: [`JWKS ${server.url('/jwks.json')}: 1 key(s) not pinned and not trusted: "beta".`],
    });
  });

  it('summarises none and unavailable with their reason', async () => {
    const none = describeTrustRoot(await loadPackTrustRoot({ env: {}, cacheDir: false }));
    expect(none).toMatchObject({
      status: 'none',
      reason: describeMissingTrustRoot(),
      code: null,
      keys: [],
    });
    const unavailable = describeTrustRoot(
      await loadPackTrustRoot({
        env: { PACKWARDEN_PACK_JWKS_URL: 'http://example.com/k' },
        cacheDir: false,
      }),
    );
    expect(unavailable).toMatchObject({
      status: 'unavailable',
      code: 'ERR_URL_INSECURE',
      retryable: false,
      source: { kind: 'jwks', configuredBy: 'env', variable: 'PACKWARDEN_PACK_JWKS_URL' },
      keys: [],
    });
    expect(JSON.parse(JSON.stringify(unavailable))).toEqual(unavailable);
  });
});

describe('describeMissingTrustRoot', () => {
  it('names every way to configure a trust root, with the AGENTHIPPO_ aliases', () => {
    const message = describeMissingTrustRoot();
    for (const way of [
      '--keys FILE',
      'PACKWARDEN_PACK_SIGNING_KEYS (or AGENTHIPPO_PACK_SIGNING_KEYS)',
      '--jwks URL',
      '--pin',
      'PACKWARDEN_PACK_JWKS_URL (or AGENTHIPPO_PACK_JWKS_URL)',
      'PACKWARDEN_PACK_JWKS_PINS (or AGENTHIPPO_PACK_JWKS_PINS)',
      'PACKWARDEN_LEASE_URL (or AGENTHIPPO_LEASE_URL)',
      '/api/keys',
    ]) {
      expect(message).toContain(way);
    }
  });
});
