import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPackTrustRoot, selectTrustedKey, type PackTrustRoot } from '../src/index.js';
import { json, startKeyServer, type KeyServer } from './helpers/key-server.js';
import { makeKey, type TestKey } from './helpers/keys.js';

// A remote source drops an entry it cannot read and keeps the others. When the dropped entry is
// the one that revokes a leaked key (a revocation record with a date in another format, a kid the
// rule refuses, a `use` of its own), the revocation must not be dropped with it: the same key
// listed under another kid would otherwise stay trusted, and its holder would sign under that kid.

let leaked: TestKey;
let other: TestKey;
let server: KeyServer;

beforeAll(async () => {
  [leaked, other] = await Promise.all([makeKey('release-2026'), makeKey('release-2027')]);
  server = await startKeyServer();
});
afterAll(() => server.close());

const at = new Date('2026-09-01T00:00:00Z');
const pick = (root: PackTrustRoot, kid: string) => selectTrustedKey(root, kid, { at });

async function jwksRoot(path: string, body: unknown): Promise<PackTrustRoot> {
  server.route(path, json(body));
  return loadPackTrustRoot({ jwksUrl: server.url(path), env: {}, cacheDir: false });
}

async function leaseRoot(body: unknown): Promise<PackTrustRoot> {
  server.route('/api/keys', json(body));
  return loadPackTrustRoot({ leaseUrl: server.url('/'), env: {}, cacheDir: false });
}

describe('a revocation in an entry the source drops still revokes the key', () => {
  it.each([
    ['a date that is not RFC 3339', { notAfter: '2026-08-01' }],
    ['notBefore after notAfter', { notBefore: 1_800_000_000, notAfter: 1_700_000_000 }],
    ['a use other than sig', { use: 'enc' }],
    ['key_ops without verify', { key_ops: ['sign'] }],
    ['a kid the kid rule refuses', { kid: 'release 2026 (leaked)' }],
  ])('JWKS: revoked entry with %s', async (_, broken) => {
    const root = await jwksRoot(`/jwks-${encodeURIComponent(_)}.json`, {
      keys: [
        { ...leaked.jwk, revoked: true, ...broken },
        { ...leaked.jwk, kid: 'store-alias' },
        other.jwk,
      ],
    });
    expect(root.status).toBe('ok');
    expect(pick(root, 'store-alias')).toMatchObject({ kind: 'untrusted-key', reason: 'revoked' });
    expect(pick(root, 'release-2027').kind).toBe('ok');
    expect(root.warnings.join('\n')).toMatch(/"store-alias" is revoked, because the same key/);
  });

  it.each([
    ['a date that is not RFC 3339', { kid: 'release-2026', notAfter: '2026-08-01' }],
    ['a kid the kid rule refuses', { kid: 'release 2026 (leaked)' }],
  ])('control plane list: revoked record with %s', async (_, broken) => {
    const root = await leaseRoot([
      { publicPem: leaked.pem, revoked: true, ...broken },
      { kid: 'store-alias', publicPem: leaked.pem },
      { kid: 'release-2027', publicPem: other.pem },
    ]);
    expect(root.status).toBe('ok');
    expect(pick(root, 'store-alias')).toMatchObject({ kind: 'untrusted-key', reason: 'revoked' });
    expect(pick(root, 'release-2027').kind).toBe('ok');
  });

  it('an unreadable entry that revokes nothing leaves the alias usable (control)', async () => {
    const root = await jwksRoot('/control.json', {
      keys: [{ ...leaked.jwk, use: 'enc' }, { ...leaked.jwk, kid: 'store-alias' }, other.jwk],
    });
    expect(pick(root, 'store-alias').kind).toBe('ok');
  });
});
