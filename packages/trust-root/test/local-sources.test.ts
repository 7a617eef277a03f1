import { execFileSync } from 'node:child_process';
import { chmod, mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadPackTrustRoot, type PackTrustRoot, TRUST_ROOT_LIMITS } from '../src/index.js';
import { json, startKeyServer, type KeyServer } from './helpers/key-server.js';
import {
  forbiddenFetch,
  jwks,
  makeKey,
  tempDir,
  type TempDir,
  type TestKey,
} from './helpers/keys.js';

let alpha: TestKey;
let beta: TestKey;
let server: KeyServer;
let dir: TempDir;

beforeAll(async () => {
  alpha = await makeKey('alpha');
  beta = await makeKey('beta');
  server = await startKeyServer();
  server.route('/jwks.json', json(jwks(beta)));
  server.route('/api/keys', json(jwks(beta)));
});
afterAll(() => server.close());
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(() => dir.cleanup());

function kids(root: PackTrustRoot): string[] {
  return root.keys.map((key) => key.kid);
}

async function keysFile(content: unknown, name = 'keys.json'): Promise<string> {
  const path = join(dir.path, name);
  await writeFile(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

describe('keys file', () => {
  it('loads {kid: PEM} with the thumbprint of the key', async () => {
    const root = await loadPackTrustRoot({
      keysFile: await keysFile({ alpha: alpha.pem }),
      env: {},
      cacheDir: false,
    });
    expect(root.status).toBe('ok');
    expect(root.source).toEqual({
      kind: 'keys-file',
      configuredBy: 'option',
      path: join(dir.path, 'keys.json'),
    });
    expect(root.keys).toHaveLength(1);
    expect(root.keys[0]?.thumbprint).toBe(alpha.thumbprint);
    expect(root.keys[0]?.jwk).toMatchObject({
      kty: 'EC',
      crv: 'P-256',
      x: alpha.jwk['x'],
      y: alpha.jwk['y'],
      kid: 'alpha',
    });
    expect(root.keys[0]?.key.type).toBe('public');
  });

  it('loads a JWKS and reads validity metadata from records of either format', async () => {
    const window = { notBefore: '2026-01-01T00:00:00Z', notAfter: 1798761600, revoked: false };
    const fromJwks = await loadPackTrustRoot({
      keysFile: await keysFile(jwks({ ...alpha.jwk, ...window }), 'a.json'),
      env: {},
      cacheDir: false,
    });
    const fromMap = await loadPackTrustRoot({
      keysFile: await keysFile({ alpha: { publicPem: alpha.pem, ...window } }, 'b.json'),
      env: {},
      cacheDir: false,
    });
    for (const root of [fromJwks, fromMap]) {
      expect(root.status).toBe('ok');
      expect(root.keys[0]?.notBefore?.toISOString()).toBe('2026-01-01T00:00:00.000Z');
      expect(root.keys[0]?.notAfter?.toISOString()).toBe('2027-01-01T00:00:00.000Z');
      expect(root.keys[0]?.revoked).toBe(false);
    }
  });

  it.each([
    ['not JSON', 'nope {', 'ERR_KEYS_PARSE'],
    ['a JSON string', '"alpha"', 'ERR_KEYS_PARSE'],
    ['an empty object', '{}', 'ERR_NO_USABLE_KEYS'],
    ['an empty JWKS', '{"keys": []}', 'ERR_NO_USABLE_KEYS'],
  ])('is unavailable when the file is %s', async (_name, content, code) => {
    const root = await loadPackTrustRoot({
      keysFile: await keysFile(content),
      env: {},
      cacheDir: false,
    });
    expect(root.status).toBe('unavailable');
    expect(root.status === 'unavailable' && root.code).toBe(code);
    expect(root.keys).toEqual([]);
  });

  it('refuses a private key, a P-384 key, a certificate-shaped and a broken PEM, naming the kid', async () => {
    const { privateKey } = alpha;
    const p384 = await makeKey('p384', 'P-384');
    const cases: [string, string][] = [
      ['private', privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()],
      ['p384', p384.pem],
      ['cert', alpha.pem.replaceAll('PUBLIC KEY', 'CERTIFICATE')],
      ['broken', alpha.pem.replace(/[A-Za-z]{8}/, 'AAAAAAAA')],
      ['two-blocks', alpha.pem + beta.pem],
    ];
    for (const [kid, pem] of cases) {
      const root = await loadPackTrustRoot({
        keysFile: await keysFile({ good: beta.pem, [kid]: pem }, `${kid}.json`),
        env: {},
        cacheDir: false,
      });
      expect(root.status, kid).toBe('unavailable');
      expect(root.status === 'unavailable' && root.code, kid).toBe('ERR_KEY_INVALID');
      expect(root.status === 'unavailable' && root.reason, kid).toContain(`"${kid}"`);
    }
  });

  it('refuses a JWK carrying d and a JWKS with a non-P-256 key', async () => {
    const withD = { ...alpha.jwk, d: alpha.privateKey.export({ format: 'jwk' }).d };
    const root = await loadPackTrustRoot({
      keysFile: await keysFile(jwks(withD, beta)),
      env: {},
      cacheDir: false,
    });
    expect(root.status === 'unavailable' && root.code).toBe('ERR_KEY_INVALID');
    const okp = {
      kty: 'OKP',
      crv: 'Ed25519',
      x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo',
      kid: 'ed',
    };
    const root2 = await loadPackTrustRoot({
      keysFile: await keysFile(jwks(okp, beta), 'k2.json'),
      env: {},
      cacheDir: false,
    });
    expect(root2.status === 'unavailable' && root2.code).toBe('ERR_KEY_INVALID');
  });

  it('refuses bad validity metadata', async () => {
    for (const [index, meta] of [
      { notBefore: 'yesterday' },
      { notAfter: '2026-01-01' },
      { revoked: 'yes' },
      { notBefore: '2027-01-01T00:00:00Z', notAfter: '2026-01-01T00:00:00Z' },
    ].entries()) {
      const root = await loadPackTrustRoot({
        keysFile: await keysFile({ alpha: { publicPem: alpha.pem, ...meta } }, `m${index}.json`),
        env: {},
        cacheDir: false,
      });
      expect(root.status === 'unavailable' && root.code, JSON.stringify(meta)).toBe(
        'ERR_KEY_INVALID',
      );
    }
  });

  it('is unavailable when the file is missing, a folder, or too large', async () => {
    const missing = await loadPackTrustRoot({
      keysFile: join(dir.path, 'missing.json'),
      env: {},
      cacheDir: false,
    });
    expect(missing.status === 'unavailable' && missing.code).toBe('ERR_KEYS_FILE_READ');
    await mkdir(join(dir.path, 'folder'));
    const folder = await loadPackTrustRoot({
      keysFile: join(dir.path, 'folder'),
      env: {},
      cacheDir: false,
    });
    expect(folder.status === 'unavailable' && folder.code).toBe('ERR_KEYS_FILE_READ');
    const big = await keysFile(
      `{"alpha": ${JSON.stringify(alpha.pem)}, "pad": "${'x'.repeat(TRUST_ROOT_LIMITS.maxDocumentBytes)}"}`,
      'big.json',
    );
    const tooLarge = await loadPackTrustRoot({ keysFile: big, env: {}, cacheDir: false });
    expect(tooLarge.status === 'unavailable' && tooLarge.code).toBe('ERR_KEYS_TOO_LARGE');
  });

  it('is unavailable, without waiting for a writer, when the file is a FIFO; follows a symlink', async () => {
    const fifo = join(dir.path, 'fifo.json');
    execFileSync('mkfifo', [fifo]);
    const root = await loadPackTrustRoot({ keysFile: fifo, env: {}, cacheDir: false });
    expect(root.status === 'unavailable' && root.code).toBe('ERR_KEYS_FILE_READ');
    // Mounted secrets are symlinks: a keys file reached through one is read.
    const link = join(dir.path, 'mounted.json');
    await symlink(await keysFile({ alpha: alpha.pem }), link);
    expect(kids(await loadPackTrustRoot({ keysFile: link, env: {}, cacheDir: false }))).toEqual([
      'alpha',
    ]);
  });

  it('refuses more than 100 keys as a whole', async () => {
    const many: Record<string, string> = {};
    for (let index = 0; index <= TRUST_ROOT_LIMITS.maxKeys; index += 1)
      many[`k${index}`] = alpha.pem;
    const root = await loadPackTrustRoot({
      keysFile: await keysFile(many),
      env: {},
      cacheDir: false,
    });
    expect(root.status === 'unavailable' && root.code).toBe('ERR_TOO_MANY_KEYS');
  });

  it('refuses a kid listed twice in a keys-file JWKS, and keeps the others', async () => {
    const root = await loadPackTrustRoot({
      keysFile: await keysFile(jwks(alpha, { ...beta.jwk, kid: 'alpha' }, beta)),
      env: {},
      cacheDir: false,
    });
    expect(root.status).toBe('ok');
    expect(kids(root)).toEqual(['beta']);
    expect(root.rejectedKeys.map((key) => [key.kid, key.reason])).toEqual([
      ['alpha', 'ambiguous-kid'],
      ['alpha', 'ambiguous-kid'],
    ]);
    expect(root.warnings.join('\n')).toMatch(/kid "alpha" 2 times/);
  });

  it('warns when the keys file is writable by everyone', async () => {
    const path = await keysFile({ alpha: alpha.pem });
    await chmod(path, 0o666);
    const root = await loadPackTrustRoot({ keysFile: path, env: {}, cacheDir: false });
    expect(root.status).toBe('ok');
    expect(root.warnings.join('\n')).toMatch(/writable by every user/);
  });
});

describe('environment keys and AGENTHIPPO_* aliases', () => {
  it('reads PACKWARDEN_PACK_SIGNING_KEYS ({kid: PEM} or JWKS)', async () => {
    const map = await loadPackTrustRoot({
      env: { PACKWARDEN_PACK_SIGNING_KEYS: JSON.stringify({ alpha: alpha.pem }) },
      cacheDir: false,
    });
    expect(map.status).toBe('ok');
    expect(map.source).toEqual({
      kind: 'env',
      configuredBy: 'env',
      variable: 'PACKWARDEN_PACK_SIGNING_KEYS',
    });
    const set = await loadPackTrustRoot({
      env: { PACKWARDEN_PACK_SIGNING_KEYS: JSON.stringify(jwks(alpha)) },
      cacheDir: false,
    });
    expect(kids(set)).toEqual(['alpha']);
  });

  it('answers to AGENTHIPPO_PACK_SIGNING_KEYS', async () => {
    const root = await loadPackTrustRoot({
      env: { AGENTHIPPO_PACK_SIGNING_KEYS: JSON.stringify({ alpha: alpha.pem }) },
      cacheDir: false,
    });
    expect(root.status).toBe('ok');
    expect(root.source.variable).toBe('AGENTHIPPO_PACK_SIGNING_KEYS');
  });

  it('prefers the PACKWARDEN_ name over its alias, and says so', async () => {
    const root = await loadPackTrustRoot({
      env: {
        PACKWARDEN_PACK_SIGNING_KEYS: JSON.stringify({ alpha: alpha.pem }),
        AGENTHIPPO_PACK_SIGNING_KEYS: JSON.stringify({ beta: beta.pem }),
      },
      cacheDir: false,
    });
    expect(kids(root)).toEqual(['alpha']);
    expect(root.warnings).toContain(
      'AGENTHIPPO_PACK_SIGNING_KEYS is ignored because PACKWARDEN_PACK_SIGNING_KEYS is set.',
    );
  });

  it('treats a blank variable as unset', async () => {
    const root = await loadPackTrustRoot({
      env: {
        PACKWARDEN_PACK_SIGNING_KEYS: '  ',
        AGENTHIPPO_PACK_SIGNING_KEYS: JSON.stringify({ beta: beta.pem }),
      },
      cacheDir: false,
    });
    expect(kids(root)).toEqual(['beta']);
  });

  it('is unavailable for malformed inline keys', async () => {
    const root = await loadPackTrustRoot({
      env: { PACKWARDEN_PACK_SIGNING_KEYS: '{"alpha": "not a pem"}' },
      cacheDir: false,
    });
    expect(root.status === 'unavailable' && root.code).toBe('ERR_KEY_INVALID');
    expect(root.source.kind).toBe('env');
  });

  it('treats a kid named __proto__ as data', async () => {
    const root = await loadPackTrustRoot({
      env: { PACKWARDEN_PACK_SIGNING_KEYS: `{"__proto__": ${JSON.stringify(alpha.pem)}}` },
      cacheDir: false,
    });
    expect(kids(root)).toEqual(['__proto__']);
  });
});

describe('precedence', () => {
  it('explicit options beat the environment, in the order keys file, keys, JWKS URL, lease URL', async () => {
    const env = {
      PACKWARDEN_PACK_SIGNING_KEYS: JSON.stringify({ beta: beta.pem }),
      PACKWARDEN_PACK_JWKS_URL: server.url('/jwks.json'),
      PACKWARDEN_LEASE_URL: server.origin,
    };
    const net = forbiddenFetch();
    const fileWins = await loadPackTrustRoot({
      env,
      keysFile: await keysFile({ alpha: alpha.pem }),
      keys: { beta: beta.pem },
      jwksUrl: server.url('/jwks.json'),
      fetch: net.fetch,
      cacheDir: false,
    });
    expect(fileWins.source.kind).toBe('keys-file');
    expect(kids(fileWins)).toEqual(['alpha']);
    expect(fileWins.warnings).toContain(
      'the keys option is also configured but not used: the keys file option takes precedence.',
    );
    expect(fileWins.warnings).toContain(
      'PACKWARDEN_PACK_SIGNING_KEYS is also configured but not used: the keys file option takes precedence.',
    );

    const inlineWins = await loadPackTrustRoot({
      env,
      keys: JSON.stringify({ alpha: alpha.pem }),
      jwksUrl: server.url('/jwks.json'),
      fetch: net.fetch,
      cacheDir: false,
    });
    expect(inlineWins.source).toEqual({ kind: 'inline', configuredBy: 'option' });
    expect(kids(inlineWins)).toEqual(['alpha']);
    expect(net.calls()).toBe(0);

    const jwksFlagWins = await loadPackTrustRoot({
      env,
      jwksUrl: server.url('/jwks.json'),
      cacheDir: false,
    });
    expect(jwksFlagWins.source).toMatchObject({
      kind: 'jwks',
      configuredBy: 'option',
      url: server.url('/jwks.json'),
    });
  });

  it('in the environment, signing keys beat the JWKS URL, which beats the lease URL', async () => {
    const net = forbiddenFetch();
    const keysWin = await loadPackTrustRoot({
      env: {
        PACKWARDEN_LEASE_URL: server.origin,
        AGENTHIPPO_PACK_JWKS_URL: server.url('/jwks.json'),
        AGENTHIPPO_PACK_SIGNING_KEYS: JSON.stringify({ alpha: alpha.pem }),
      },
      fetch: net.fetch,
      cacheDir: false,
    });
    expect(keysWin.source.kind).toBe('env');
    expect(net.calls()).toBe(0);
    const jwksWins = await loadPackTrustRoot({
      env: {
        PACKWARDEN_LEASE_URL: server.origin,
        AGENTHIPPO_PACK_JWKS_URL: server.url('/jwks.json'),
      },
      cacheDir: false,
    });
    expect(jwksWins.source).toMatchObject({
      kind: 'jwks',
      configuredBy: 'env',
      variable: 'AGENTHIPPO_PACK_JWKS_URL',
    });
    expect(jwksWins.warnings).toContain(
      'PACKWARDEN_LEASE_URL is also configured but not used: AGENTHIPPO_PACK_JWKS_URL takes precedence.',
    );
  });

  it('warns that pins do not apply to local keys', async () => {
    const root = await loadPackTrustRoot({
      keys: { alpha: alpha.pem },
      env: { PACKWARDEN_PACK_JWKS_PINS: beta.thumbprint },
      cacheDir: false,
    });
    expect(kids(root)).toEqual(['alpha']);
    expect(root.warnings.join('\n')).toMatch(/ignored for local keys/);
  });
});

describe('local keys never touch the network', () => {
  it('makes no request with a keys file, inline keys or env keys, though a JWKS and a lease are configured', async () => {
    const before = server.count();
    const net = forbiddenFetch();
    const env = {
      PACKWARDEN_PACK_JWKS_URL: server.url('/jwks.json'),
      PACKWARDEN_PACK_JWKS_PINS: beta.thumbprint,
      PACKWARDEN_LEASE_URL: server.origin,
    };
    const file = await keysFile({ alpha: alpha.pem });
    const roots = [
      await loadPackTrustRoot({ keysFile: file, env, fetch: net.fetch, cacheDir: dir.path }),
      await loadPackTrustRoot({
        keys: { alpha: alpha.pem },
        env,
        fetch: net.fetch,
        cacheDir: dir.path,
      }),
      await loadPackTrustRoot({
        env: { ...env, AGENTHIPPO_PACK_SIGNING_KEYS: JSON.stringify({ alpha: alpha.pem }) },
        fetch: net.fetch,
        cacheDir: dir.path,
      }),
      // And with the real global fetch: the server must still see nothing.
      await loadPackTrustRoot({ keysFile: file, env, cacheDir: dir.path }),
      await loadPackTrustRoot({
        env: { ...env, PACKWARDEN_PACK_SIGNING_KEYS: JSON.stringify({ alpha: alpha.pem }) },
        cacheDir: dir.path,
      }),
    ];
    for (const root of roots) expect(kids(root)).toEqual(['alpha']);
    expect(net.calls()).toBe(0);
    expect(server.count()).toBe(before);
    // The control: the same env without local keys does reach the server.
    const remote = await loadPackTrustRoot({ env, cacheDir: false });
    expect(kids(remote)).toEqual(['beta']);
    expect(server.count()).toBe(before + 1);
    // Nothing was cached for local keys either.
    expect(await readdir(dir.path)).toEqual(['keys.json']);
  });
});

describe('none', () => {
  it('is none with nothing configured, and names each way to configure a trust root', async () => {
    const net = forbiddenFetch();
    const root = await loadPackTrustRoot({
      env: { HOME: dir.path, PACKWARDEN_PACK_JWKS_PINS: alpha.thumbprint },
      fetch: net.fetch,
    });
    expect(root.status).toBe('none');
    expect(root.keys).toEqual([]);
    expect(root.source).toEqual({ kind: 'none', configuredBy: 'none' });
    const reason = root.status === 'none' ? root.reason : '';
    for (const way of [
      '--keys FILE',
      'PACKWARDEN_PACK_SIGNING_KEYS',
      'AGENTHIPPO_PACK_SIGNING_KEYS',
      '--jwks URL',
      '--pin',
      'PACKWARDEN_PACK_JWKS_URL',
      'PACKWARDEN_PACK_JWKS_PINS',
      'PACKWARDEN_LEASE_URL',
      'AGENTHIPPO_LEASE_URL',
    ]) {
      expect(reason).toContain(way);
    }
    expect(net.calls()).toBe(0);
  });
});
