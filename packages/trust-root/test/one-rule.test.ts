import { writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { describeTrustRoot, loadPackTrustRoot } from '../src/index.js';
import { defaultCacheDir } from '../src/options.js';
import { json, startKeyServer, type KeyServer } from './helpers/key-server.js';
import { jwks, makeKey, tempDir, type TempDir, type TestKey } from './helpers/keys.js';

// Issue 13.6: the trust root reads the environment and judges kids with pack-manifest's rules,
// the ones pack-signature uses too.

let good: TestKey;
let server: KeyServer;
let dir: TempDir;
beforeAll(async () => {
  good = await makeKey('release');
  server = await startKeyServer();
  server.route('/jwks', json(jwks(good)));
});
afterAll(() => server.close());
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(() => dir.cleanup());

const BIDI = 'release\u202egpj.exe';
const ESCAPE = 'release\u001b]0;owned\u0007';

describe('one kid rule', () => {
  it.each([
    ['a bidi override', BIDI],
    ['a terminal escape', ESCAPE],
    ['a zero-width space', 'rel\u200bease'],
    ['a path separator', 'keys/release'],
  ])('a local keys file with %s in a kid is unavailable (ERR_KEY_INVALID)', async (_n, kid) => {
    const file = join(dir.path, 'keys.json');
    await writeFile(file, JSON.stringify({ [kid]: good.pem }));
    const root = await loadPackTrustRoot({ keysFile: file, env: {} });
    expect(root.status === 'unavailable' && root.code).toBe('ERR_KEY_INVALID');
    expect(root.keys).toEqual([]);
  });

  it('a remote JWKS drops such a key; trust show never prints the kid', async () => {
    const badServer = await startKeyServer();
    try {
      badServer.route('/jwks', json(jwks({ ...good.jwk, kid: BIDI }, good)));
      const root = await loadPackTrustRoot({
        jwksUrl: badServer.url('/jwks'),
        env: {},
        cacheDir: false,
      });
      expect(root.status).toBe('ok');
      expect(root.keys.map((key) => key.kid)).toEqual(['release']);
      const shown = JSON.stringify(describeTrustRoot(root));
      expect(shown).not.toContain('\u202e');
      expect(root.rejectedKeys[0]?.reason).toBe('missing-kid');
    } finally {
      await badServer.close();
    }
  });
});

describe('one environment reading', () => {
  it('values are trimmed and blank is unset, as everywhere in packwarden', async () => {
    const root = await loadPackTrustRoot({
      env: {
        PACKWARDEN_PACK_SIGNING_KEYS: '  ',
        AGENTHIPPO_PACK_SIGNING_KEYS: JSON.stringify({ release: good.pem }),
      },
    });
    expect(root.status).toBe('ok');
    expect(root.source).toMatchObject({ kind: 'env', variable: 'AGENTHIPPO_PACK_SIGNING_KEYS' });
  });

  it('HOME="" or a relative HOME never puts the cache under the current folder', () => {
    for (const HOME of ['', ' ', 'relative', './x']) {
      const { dir: cacheDir } = defaultCacheDir({ HOME });
      expect(typeof cacheDir === 'string' && isAbsolute(cacheDir)).toBe(true);
      expect(cacheDir).toBe(join(userInfo().homedir, '.packwarden', 'cache', 'trust-root'));
    }
  });

  it('a relative PACKWARDEN_HOME: no disk cache, with a warning; keys still load', async () => {
    const root = await loadPackTrustRoot({
      jwksUrl: server.url('/jwks'),
      env: { PACKWARDEN_HOME: 'state' },
    });
    expect(root.status).toBe('ok');
    expect(root.warnings.join('\n')).toMatch(
      /no trust root cache on disk: PACKWARDEN_HOME must be an absolute path/,
    );
  });
});
