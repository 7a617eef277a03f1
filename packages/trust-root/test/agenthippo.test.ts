import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { calculateJwkThumbprint, compactVerify, decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPackTrustRoot, selectTrustedKey, type PackTrustRoot } from '../src/index.js';
import { raw, startKeyServer, type KeyServer } from './helpers/key-server.js';
import { makeKey } from './helpers/keys.js';

const PIN = 'S9FC_5c2n3eZEAD1bQ_46jn24OADyXq0kITicUEUpgs';
const KID = 'store-release-2026-08';
const fixture = (name: string): string =>
  fileURLToPath(new URL(`./fixtures/agenthippo/${name}`, import.meta.url));

let server: KeyServer;
let token: string;

beforeAll(async () => {
  server = await startKeyServer();
  server.route(
    '/.well-known/jwks.json',
    raw(await readFile(fixture('jwks.json')), { 'content-type': 'application/json' }),
  );
  token = (await readFile(fixture('joker1.pack.sig'), 'utf8')).trim();
});
afterAll(() => server.close());

async function expectUsableStoreKey(root: PackTrustRoot): Promise<void> {
  expect(root.status).toBe('ok');
  const iat = decodeJwt(token).iat;
  expect(typeof iat).toBe('number');
  const pick = selectTrustedKey(root, decodeProtectedHeader(token).kid ?? '', {
    at: new Date((iat ?? 0) * 1000),
  });
  expect(pick.kind).toBe('ok');
  if (pick.kind !== 'ok') return;
  expect(pick.key.kid).toBe(KID);
  expect(pick.key.thumbprint).toBe(PIN);
  // The selected key verifies the store's real pack.sig with jose.
  const { payload } = await compactVerify(token, pick.key.key, { algorithms: ['ES256'] });
  expect(JSON.parse(new TextDecoder().decode(payload))).toMatchObject({
    pack: 'joker1',
    packVersion: '0.1.3',
  });
}

describe('the AgentHippo store key', () => {
  it('has the published thumbprint (checked with jose)', async () => {
    const jwk = JSON.parse(
      await readFile(fixture('store-release-2026-08.jwk.json'), 'utf8'),
    ) as Record<string, string>;
    expect(await calculateJwkThumbprint(jwk, 'sha256')).toBe(PIN);
  });

  it('loads from the {kid: PEM} keys file', async () => {
    await expectUsableStoreKey(
      await loadPackTrustRoot({ keysFile: fixture('keys.json'), env: {}, cacheDir: false }),
    );
  });

  it('loads from the JWKS as a keys file', async () => {
    await expectUsableStoreKey(
      await loadPackTrustRoot({ keysFile: fixture('jwks.json'), env: {}, cacheDir: false }),
    );
  });

  it('loads from AGENTHIPPO_PACK_SIGNING_KEYS, as the AgentHippo runtime is configured', async () => {
    const keys = await readFile(fixture('keys.json'), 'utf8');
    await expectUsableStoreKey(
      await loadPackTrustRoot({ env: { AGENTHIPPO_PACK_SIGNING_KEYS: keys }, cacheDir: false }),
    );
  });

  it('loads from its JWKS served on loopback with the published pin', async () => {
    const root = await loadPackTrustRoot({
      env: {
        AGENTHIPPO_PACK_JWKS_URL: server.url('/.well-known/jwks.json?purpose=pack-signing'),
        AGENTHIPPO_PACK_JWKS_PINS: PIN,
      },
      cacheDir: false,
    });
    expect(root.source.pins).toEqual([PIN]);
    await expectUsableStoreKey(root);
  });

  it('is refused when the pin is another key', async () => {
    const other = await makeKey('other');
    const root = await loadPackTrustRoot({
      jwksUrl: server.url('/.well-known/jwks.json'),
      pins: [other.thumbprint],
      env: {},
      cacheDir: false,
    });
    expect(root.status === 'unavailable' && root.code).toBe('ERR_PIN_MISMATCH');
    const pick = selectTrustedKey(root, KID, { at: new Date() });
    expect(pick.kind).toBe('trust-root-unavailable');
  });
});
