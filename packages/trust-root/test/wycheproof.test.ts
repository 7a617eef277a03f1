import { readFileSync } from 'node:fs';
import { compactVerify, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPackTrustRoot, selectTrustedKey, type PackTrustRoot } from '../src/index.js';
import { json, startKeyServer, type KeyServer } from './helpers/key-server.js';

/** Project Wycheproof `json_web_key_test.json` (see test/fixtures/README.md). */
interface JwkTestFile {
  readonly numberOfTests: number;
  readonly testGroups: readonly {
    readonly comment: string;
    readonly private: { readonly keys: readonly Record<string, unknown>[] };
    readonly public?: { readonly keys: readonly Record<string, unknown>[] };
    readonly tests: readonly {
      readonly tcId: number;
      readonly comment: string;
      readonly jws: string;
      readonly result: 'valid' | 'invalid' | 'acceptable';
    }[];
  }[];
}

const vectors = JSON.parse(
  readFileSync(new URL('./fixtures/wycheproof/json_web_key_test.json', import.meta.url), 'utf8'),
) as JwkTestFile;
const cases = vectors.testGroups.flatMap((group) =>
  group.tests.map((test) => ({
    ...test,
    group: group.comment,
    keys: group.public?.keys ?? group.private.keys,
  })),
);

let server: KeyServer;
beforeAll(async () => {
  server = await startKeyServer();
  for (const test of cases) server.route(`/wycheproof/${test.tcId}`, json({ keys: test.keys }));
});
afterAll(() => server.close());

async function accepts(root: PackTrustRoot, jws: string): Promise<boolean> {
  const kid = decodeProtectedHeader(jws).kid ?? '';
  const pick = selectTrustedKey(root, kid, { at: new Date() });
  if (pick.kind !== 'ok') return false;
  try {
    await compactVerify(jws, pick.key.key, { algorithms: ['ES256'] });
    return true;
  } catch {
    return false;
  }
}

describe('Wycheproof JWK vectors through the JWK import path', () => {
  it('covers every vector of the file', () => {
    expect(cases).toHaveLength(vectors.numberOfTests);
  });

  it.each(cases.map((test) => [test.tcId, test.group, test.comment, test.result, test] as const))(
    'tcId %i (%s, %s, %s): never accepted as a trusted P-256 key',
    async (_id, _group, _comment, result, test) => {
      // Both import paths: inline keys (strict, local) and a JWKS served over HTTP (lenient, remote).
      const inline = await loadPackTrustRoot({
        keys: { keys: test.keys },
        env: {},
        cacheDir: false,
      });
      const served = await loadPackTrustRoot({
        jwksUrl: server.url(`/wycheproof/${test.tcId}`),
        env: {},
        cacheDir: false,
      });
      expect(await accepts(inline, test.jws)).toBe(false);
      expect(await accepts(served, test.jws)).toBe(false);
      if (result === 'valid') {
        // The valid vectors are HMAC and RSA keysets: valid JWKs, but never ES256 P-256 trust.
        expect(served.status).toBe('unavailable');
        expect(served.status === 'unavailable' && served.code).toBe('ERR_NO_USABLE_KEYS');
      }
      // Nothing a vector marks invalid ends up among the trusted keys for its kid.
      const kid = decodeProtectedHeader(test.jws).kid;
      expect(served.keys.filter((key) => key.kid === kid)).toEqual([]);
    },
  );

  it('control: the same EC key with ES256/sig metadata is accepted and verifies those tokens', async () => {
    const ecCases = cases.filter((test) => test.tcId >= 19 && test.tcId <= 24);
    expect(ecCases).toHaveLength(6);
    const good = {
      kty: 'EC',
      crv: 'P-256',
      kid: 'kid-ec-sign',
      alg: 'ES256',
      use: 'sig',
      x: '04N0xi21hshyvBp7I167sbE_bXqyqkAPfefdklMO7wY',
      y: 'UI8exy-C06a7DUnjIdENkxeFtHM4-l_41LqEw9nVgmw',
    };
    const root = await loadPackTrustRoot({ keys: { keys: [good] }, env: {}, cacheDir: false });
    expect(root.status).toBe('ok');
    for (const test of ecCases)
      expect(await accepts(root, test.jws), `tcId ${test.tcId}`).toBe(true);
  });

  it('the mixed public/secret keyset keeps only its EC public key when served, and fails as a whole when local', async () => {
    const mixed = cases.find((test) => test.tcId === 1);
    const served = await loadPackTrustRoot({
      jwksUrl: server.url('/wycheproof/1'),
      env: {},
      cacheDir: false,
    });
    expect(served.keys.map((key) => key.kid)).toEqual(['kid-ec-sign']);
    expect(served.rejectedKeys.map((key) => [key.kid, key.reason])).toEqual([
      ['kid-aes-sign', 'private-key'],
    ]);
    const inline = await loadPackTrustRoot({
      keys: { keys: mixed?.keys ?? [] },
      env: {},
      cacheDir: false,
    });
    expect(inline.status === 'unavailable' && inline.code).toBe('ERR_KEY_INVALID');
  });
});
