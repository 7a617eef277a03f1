import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadPackTrustRoot, selectTrustedKey, type PackTrustRoot } from '../src/index.js';
import { json, startKeyServer, type KeyServer } from './helpers/key-server.js';
import { makeKey, tempDir, type TempDir, type TestKey } from './helpers/keys.js';

// A key that leaked is revoked under the kid it signed with; the same key may still be listed
// under another kid (an alias kept through a migration, the store's kid next to the fleet's).
// Its holder must not be able to sign under the alias instead.

let leaked: TestKey;
let other: TestKey;
let server: KeyServer;
let dir: TempDir;

beforeAll(async () => {
  [leaked, other] = await Promise.all([makeKey('release-2026'), makeKey('release-2027')]);
  server = await startKeyServer();
});
afterAll(() => server.close());
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(() => dir.cleanup());

const at = new Date('2026-09-01T00:00:00Z');
const pick = (root: PackTrustRoot, kid: string) => selectTrustedKey(root, kid, { at });

describe('revocation follows the key to every kid it is listed under', () => {
  it('keys file {kid: PEM}: the alias of a revoked key is refused as revoked', async () => {
    const file = join(dir.path, 'keys.json');
    await writeFile(
      file,
      JSON.stringify({
        'release-2026': { publicPem: leaked.pem, revoked: true },
        'store-alias': leaked.pem,
        'release-2027': other.pem,
      }),
    );
    const root = await loadPackTrustRoot({ keysFile: file, env: {} });
    expect(root.status).toBe('ok');
    expect(pick(root, 'release-2026')).toMatchObject({ kind: 'untrusted-key', reason: 'revoked' });
    expect(pick(root, 'store-alias')).toMatchObject({ kind: 'untrusted-key', reason: 'revoked' });
    expect(pick(root, 'release-2027').kind).toBe('ok');
    expect(root.warnings.join('\n')).toMatch(/"store-alias" is revoked, because the same key/);
  });

  it('JWKS over HTTP: the same, whichever entry comes first', async () => {
    server.route(
      '/jwks.json',
      json({
        keys: [{ ...leaked.jwk, kid: 'store-alias' }, { ...leaked.jwk, revoked: true }, other.jwk],
      }),
    );
    const root = await loadPackTrustRoot({
      jwksUrl: server.url('/jwks.json'),
      env: {},
      cacheDir: false,
    });
    expect(pick(root, 'store-alias')).toMatchObject({ kind: 'untrusted-key', reason: 'revoked' });
    expect(pick(root, 'release-2027').kind).toBe('ok');
  });

  it('JWKS: a second spelling of the revoked key (non-canonical base64url x) is no key at all', async () => {
    const x = leaked.jwk['x']!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    // The last character carries 2 unused bits: the next letter decodes to the same 32 bytes.
    const respelled = x.slice(0, -1) + alphabet[alphabet.indexOf(x.at(-1)!) + 1];
    server.route(
      '/respelled.json',
      json({
        keys: [
          { ...leaked.jwk, revoked: true },
          { ...leaked.jwk, kid: 'store-alias', x: respelled },
          other.jwk,
        ],
      }),
    );
    const root = await loadPackTrustRoot({
      jwksUrl: server.url('/respelled.json'),
      env: {},
      cacheDir: false,
    });
    expect(pick(root, 'store-alias')).toMatchObject({ kind: 'untrusted-key' });
    expect(root.rejectedKeys).toContainEqual(
      expect.objectContaining({ kid: 'store-alias', reason: 'invalid-key' }),
    );
    expect(pick(root, 'release-2027').kind).toBe('ok');
  });

  it('an unrevoked key under two kids stays usable under both (control)', async () => {
    const root = await loadPackTrustRoot({
      keys: { 'release-2026': leaked.pem, 'store-alias': leaked.pem },
      env: {},
    });
    expect(pick(root, 'release-2026').kind).toBe('ok');
    expect(pick(root, 'store-alias').kind).toBe('ok');
  });
});
