import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadPackTrustRoot, selectTrustedKey } from '../src/index.js';
import { startKeyServer, type KeyServer } from './helpers/key-server.js';
import { forbiddenFetch, makeKey, tempDir, type TempDir, type TestKey } from './helpers/keys.js';

// Issue 16, finding 5: key documents were read with JSON.parse, which keeps the last of two
// members with the same name. Every trust document now goes through the strict parser.

let release: TestKey;
let attacker: TestKey;
let server: KeyServer;
let dir: TempDir;
let body = '';

beforeAll(async () => {
  release = await makeKey('release');
  attacker = await makeKey('attacker');
  server = await startKeyServer();
  server.route('/jwks', (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  server.route('/api/keys', (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
});
afterAll(() => server.close());
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(() => dir.cleanup());

const pemJson = (key: TestKey) => JSON.stringify(key.pem);
const jwkJson = (key: TestKey, extra = '') =>
  `{"kty":"EC","crv":"P-256","x":"${key.jwk['x']}","y":"${key.jwk['y']}","kid":"${key.kid}"${extra}}`;

/** `{"release": A, "release": B}`: JSON.parse would trust B under A's kid. */
const twoReleases = () => `{"release": ${pemJson(release)}, "release": ${pemJson(attacker)}}`;
/** A revoked key un-revoked by a second member. */
const unrevoked = () =>
  `{"release": {"publicPem": ${pemJson(release)}, "revoked": true, "revoked": false}}`;
/** A JWK whose coordinates are replaced by a second `x`. */
const jwksTwoX = () => `{"keys": [${jwkJson(release, `,"x":"${attacker.jwk['x']}"`)}]}`;
const jwksTwoKeys = () => `{"keys": [${jwkJson(release)}], "keys": [${jwkJson(attacker)}]}`;
/** A control-plane list entry whose kid is given twice. */
const listTwoKids = () =>
  `[{"kid": "release", "publicPem": ${pemJson(attacker)}, "kid": "attacker"}]`;

describe('a key document that repeats a member is refused as a whole', () => {
  it.each([
    ['two values for one kid', twoReleases],
    ['"revoked": true, "revoked": false', unrevoked],
    ['a JWKS with two "keys"', jwksTwoKeys],
  ])('keys file: %s → unavailable, ERR_KEYS_DUPLICATE_MEMBER', async (_name, document) => {
    const file = join(dir.path, 'keys.json');
    await writeFile(file, document());
    const network = forbiddenFetch();
    const root = await loadPackTrustRoot({ keysFile: file, env: {}, fetch: network.fetch });
    expect(root.status).toBe('unavailable');
    expect(root.status === 'unavailable' && root.code).toBe('ERR_KEYS_DUPLICATE_MEMBER');
    expect(root.keys).toEqual([]);
    expect(selectTrustedKey(root, 'release', { at: new Date('2026-09-01T00:00:00Z') }).kind).toBe(
      'trust-root-unavailable',
    );
    expect(network.calls()).toBe(0);
  });

  it('PACKWARDEN_PACK_SIGNING_KEYS and the keys option: the same refusal', async () => {
    for (const options of [
      { env: { PACKWARDEN_PACK_SIGNING_KEYS: twoReleases() } },
      { env: { AGENTHIPPO_PACK_SIGNING_KEYS: unrevoked() } },
      { env: {}, keys: twoReleases() },
    ]) {
      const root = await loadPackTrustRoot({ ...options, cacheDir: false });
      expect(root.status === 'unavailable' && root.code).toBe('ERR_KEYS_DUPLICATE_MEMBER');
    }
  });

  it.each([
    ['JWKS', '/jwks', jwksTwoX],
    ['JWKS', '/jwks', jwksTwoKeys],
    ['control plane', '/api/keys', listTwoKids],
  ])('%s over HTTP (%s): refused, and nothing is cached', async (_name, route, document) => {
    body = document();
    const cacheDir = join(dir.path, 'cache');
    const root = await loadPackTrustRoot({
      env: {},
      ...(route === '/jwks' ? { jwksUrl: server.url(route) } : { leaseUrl: server.origin }),
      cacheDir,
    });
    expect(root.status === 'unavailable' && root.code).toBe('ERR_KEYS_DUPLICATE_MEMBER');
    expect(root.keys).toEqual([]);
    await expect(readdir(cacheDir)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a document without repeated members still loads (control)', async () => {
    const file = join(dir.path, 'keys.json');
    await writeFile(file, `{"release": ${pemJson(release)}, "other": ${pemJson(attacker)}}`);
    const root = await loadPackTrustRoot({ keysFile: file, env: {} });
    expect(root.status).toBe('ok');
    expect(root.keys.map((key) => key.kid).sort()).toEqual(['other', 'release']);
  });

  it('"__proto__" as a kid stays a plain kid and pollutes nothing', async () => {
    const root = await loadPackTrustRoot({
      env: { PACKWARDEN_PACK_SIGNING_KEYS: `{"__proto__": ${pemJson(release)}}` },
    });
    expect(root.status).toBe('ok');
    expect(root.keys.map((key) => key.kid)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>)['publicPem']).toBeUndefined();
  });
});
