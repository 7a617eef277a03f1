import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  loadPackTrustRoot,
  selectTrustedKey,
  TRUST_ROOT_LIMITS,
  type PackTrustRoot,
} from '../src/index.js';
import {
  hang,
  json,
  raw,
  redirect,
  reset,
  startKeyServer,
  status,
  stream,
  type KeyServer,
} from './helpers/key-server.js';
import { forbiddenFetch, jwks, makeKey, type TestKey } from './helpers/keys.js';

let alpha: TestKey;
let beta: TestKey;
let gamma: TestKey;
let server: KeyServer;
const at = new Date('2026-09-01T00:00:00Z');

beforeAll(async () => {
  [alpha, beta, gamma] = await Promise.all([makeKey('alpha'), makeKey('beta'), makeKey('gamma')]);
  server = await startKeyServer();
  server.route('/jwks.json', json(jwks(alpha, beta)));
});
afterAll(() => server.close());

function load(
  path: string,
  extra: Parameters<typeof loadPackTrustRoot>[0] = {},
): Promise<PackTrustRoot> {
  return loadPackTrustRoot({
    jwksUrl: server.url(path),
    env: {},
    cacheDir: false,
    timeoutMs: 1_000,
    ...extra,
  });
}

function codeOf(root: PackTrustRoot): string | undefined {
  return root.status === 'unavailable' ? root.code : undefined;
}

describe('JWKS over HTTP', () => {
  it('loads a JWKS from loopback with a plain GET and nothing else', async () => {
    const root = await load('/jwks.json');
    expect(root.status).toBe('ok');
    expect(root.keys.map((key) => [key.kid, key.thumbprint])).toEqual([
      ['alpha', alpha.thumbprint],
      ['beta', beta.thumbprint],
    ]);
    expect(root.delivery).toBe('network');
    const request = server.requests.at(-1);
    expect(request?.method).toBe('GET');
    expect(request?.bodyBytes).toBe(0);
    expect(request?.headers['authorization']).toBeUndefined();
    expect(request?.headers['cookie']).toBeUndefined();
    expect(request?.headers['if-none-match']).toBeUndefined();
  });

  it('only ever sends GET, whatever the outcome', async () => {
    // Its own requests (success, HTTP error, redirect, invalid body): the test must not depend on
    // which other tests ran before it (it once read the requests earlier tests had left behind).
    server.route('/get-only-500', status(500));
    server.route('/get-only-target', json(jwks(alpha)));
    server.route('/get-only-302', redirect(302, server.url('/get-only-target')));
    server.route('/get-only-garbage', raw('not json'));
    const paths = ['/jwks.json', '/get-only-500', '/get-only-302', '/get-only-garbage'];
    const before = server.requests.length;
    const outcomes = [];
    for (const path of paths) outcomes.push((await load(path)).status);
    expect(outcomes).toEqual(['ok', 'unavailable', 'unavailable', 'unavailable']);
    const mine = server.requests.slice(before);
    expect(mine.map((request) => request.path)).toEqual(paths);
    expect(new Set(mine.map((request) => request.method))).toEqual(new Set(['GET']));
  });

  it.each([
    ['http://example.com/jwks.json', 'ERR_URL_INSECURE'],
    ['http://10.0.0.1/jwks.json', 'ERR_URL_INSECURE'],
    ['http://127.0.0.1.nip.io/jwks.json', 'ERR_URL_INSECURE'],
    ['file:///etc/passwd', 'ERR_URL_INVALID'],
    ['ftp://example.com/jwks.json', 'ERR_URL_INVALID'],
    ['https://user:secret@example.com/jwks.json', 'ERR_URL_INVALID'],
    ['not a url', 'ERR_URL_INVALID'],
  ])('refuses %s before any request', async (url, code) => {
    const net = forbiddenFetch();
    const root = await loadPackTrustRoot({
      jwksUrl: url,
      env: {},
      fetch: net.fetch,
      cacheDir: false,
    });
    expect(root.status).toBe('unavailable');
    expect(codeOf(root)).toBe(code);
    expect(net.calls()).toBe(0);
  });

  it('allows HTTPS to any host (fetch injected: no real network here)', async () => {
    const seen: string[] = [];
    const fetch = (async (input: string | URL | Request) => {
      seen.push(String(input));
      return new Response(JSON.stringify(jwks(alpha)), { status: 200 });
    }) as typeof globalThis.fetch;
    const root = await loadPackTrustRoot({
      jwksUrl: 'https://keys.example.com/jwks.json#frag',
      env: {},
      fetch,
      cacheDir: false,
    });
    expect(root.status).toBe('ok');
    expect(seen).toEqual(['https://keys.example.com/jwks.json']);
  });

  it.each([500, 503])('is unavailable (retryable) on HTTP %i without a cache', async (code) => {
    server.route(`/status-${code}`, status(code));
    const root = await load(`/status-${code}`);
    expect(codeOf(root)).toBe('ERR_HTTP_STATUS');
    expect(root.status === 'unavailable' && root.retryable).toBe(true);
  });

  it.each([401, 403, 404, 410])('is unavailable (not retryable) on HTTP %i', async (code) => {
    server.route(`/status-${code}`, status(code));
    const root = await load(`/status-${code}`);
    expect(codeOf(root)).toBe('ERR_HTTP_STATUS');
    expect(root.status === 'unavailable' && root.retryable).toBe(false);
  });

  it('times out a server that never answers', async () => {
    server.route('/hang', hang());
    const started = Date.now();
    const root = await load('/hang', { timeoutMs: 200 });
    expect(codeOf(root)).toBe('ERR_FETCH_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('times out a body that stalls half way', async () => {
    server.route('/stall', stream(1_000, { stall: true }));
    const root = await load('/stall', { timeoutMs: 300 });
    expect(codeOf(root)).toBe('ERR_FETCH_TIMEOUT');
  });

  it('reports a connection reset as a network error', async () => {
    server.route('/reset', reset());
    const root = await load('/reset');
    expect(codeOf(root)).toBe('ERR_FETCH_FAILED');
    expect(root.status === 'unavailable' && root.retryable).toBe(true);
  });

  it('reports a closed port as a network error', async () => {
    const root = await loadPackTrustRoot({
      jwksUrl: 'http://127.0.0.1:1/jwks.json',
      env: {},
      cacheDir: false,
    });
    expect(codeOf(root)).toBe('ERR_FETCH_FAILED');
  });

  it.each([
    ['garbage', raw('<html>definitely not json'), 'ERR_KEYS_PARSE'],
    ['invalid UTF-8', raw(Buffer.from([0x7b, 0xff, 0xfe, 0x7d])), 'ERR_KEYS_PARSE'],
    ['a {kid: PEM} map', json({ alpha: 'x' }), 'ERR_KEYS_PARSE'],
    ['a list', json([{ kid: 'a', publicPem: 'x' }]), 'ERR_KEYS_PARSE'],
    ['an empty key set', json({ keys: [] }), 'ERR_NO_USABLE_KEYS'],
    ['a 204', status(204), 'ERR_HTTP_STATUS'],
  ])('refuses %s', async (name, handler, code) => {
    const path = `/bad-${name.replace(/\W+/g, '-')}`;
    server.route(path, handler);
    const root = await load(path);
    expect(codeOf(root)).toBe(code);
    expect(root.keys).toEqual([]);
  });

  it('refuses a 10 MiB body, streamed without Content-Length', async () => {
    server.route('/huge', stream(10 * 1024 * 1024));
    const root = await load('/huge', { timeoutMs: 5_000 });
    expect(codeOf(root)).toBe('ERR_RESPONSE_TOO_LARGE');
  });

  it('enforces the size bound while streaming, not after the body ends', async () => {
    // The body never ends: only a reader that counts as it goes can fail before the timeout.
    server.route(
      '/endless',
      stream(TRUST_ROOT_LIMITS.maxDocumentBytes + 64 * 1024, { stall: true }),
    );
    const root = await load('/endless', { timeoutMs: 3_000 });
    expect(codeOf(root)).toBe('ERR_RESPONSE_TOO_LARGE');
  });

  it('refuses a declared Content-Length above the bound without reading', async () => {
    server.route(
      '/declared',
      stream(TRUST_ROOT_LIMITS.maxDocumentBytes + 1, { contentLength: true, stall: true }),
    );
    const root = await load('/declared', { timeoutMs: 3_000 });
    expect(codeOf(root)).toBe('ERR_RESPONSE_TOO_LARGE');
  });

  it('accepts a body of exactly the bound', async () => {
    const body = JSON.stringify(jwks(alpha));
    server.route(
      '/exact',
      raw(body + ' '.repeat(TRUST_ROOT_LIMITS.maxDocumentBytes - Buffer.byteLength(body))),
    );
    const root = await load('/exact');
    expect(root.status).toBe('ok');
  });

  it.each([301, 302, 303, 307, 308])(
    'refuses a %i redirect and never requests its target',
    async (code) => {
      server.route('/target.json', json(jwks(alpha)));
      server.route(`/redirect-${code}`, redirect(code, server.url('/target.json')));
      const before = server.count('/target.json');
      const root = await load(`/redirect-${code}`);
      expect(codeOf(root)).toBe('ERR_REDIRECT_REFUSED');
      expect(root.status === 'unavailable' && root.reason).toContain('/target.json');
      expect(server.count('/target.json')).toBe(before);
    },
  );

  it('refuses a redirect even when an injected fetch follows it', async () => {
    const fetch = (async () => {
      const response = new Response(JSON.stringify(jwks(alpha)), { status: 200 });
      Object.defineProperty(response, 'redirected', { value: true });
      return response;
    }) as typeof globalThis.fetch;
    const root = await loadPackTrustRoot({
      jwksUrl: 'https://keys.example.com/jwks.json',
      env: {},
      fetch,
      cacheDir: false,
    });
    expect(codeOf(root)).toBe('ERR_REDIRECT_REFUSED');
  });

  it('refuses more than 100 keys as a whole', async () => {
    server.route(
      '/many',
      json({
        keys: Array.from({ length: TRUST_ROOT_LIMITS.maxKeys + 1 }, (_, index) => ({
          ...alpha.jwk,
          kid: `k${index}`,
        })),
      }),
    );
    expect(codeOf(await load('/many'))).toBe('ERR_TOO_MANY_KEYS');
  });

  it('rejects a caller abort with ERR_ABORTED', async () => {
    server.route('/slow', hang());
    const controller = new AbortController();
    const pending = load('/slow', { signal: controller.signal, timeoutMs: 5_000 });
    setTimeout(() => controller.abort(), 50);
    await expect(pending).rejects.toMatchObject({ name: 'TrustRootError', code: 'ERR_ABORTED' });
    await expect(load('/jwks.json', { signal: AbortSignal.abort() })).rejects.toMatchObject({
      code: 'ERR_ABORTED',
    });
  });
});

describe('key filtering', () => {
  it('drops a key with d, another curve or kty with a warning, and keeps the rest', async () => {
    const p384 = await makeKey('p384', 'P-384');
    const ed = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({
      format: 'jwk',
    });
    server.route(
      '/mixed',
      json(
        jwks(
          { ...gamma.jwk, d: gamma.privateKey.export({ format: 'jwk' }).d },
          p384,
          { ...ed, kid: 'ed25519' },
          { ...rsa, kid: 'rsa' },
          { kty: 'oct', k: 'c2VjcmV0', kid: 'hmac' },
          { ...beta.jwk, kid: undefined },
          { ...beta.jwk, alg: 'ES384', kid: 'wrong-alg' },
          { ...beta.jwk, use: 'enc', kid: 'wrong-use' },
          { ...beta.jwk, key_ops: ['sign'], kid: 'wrong-ops' },
          { ...beta.jwk, y: beta.jwk['x'], kid: 'off-curve' },
          { ...beta.jwk, notAfter: 'soon', kid: 'bad-meta' },
          'not an object',
          alpha,
        ),
      ),
    );
    const root = await load('/mixed');
    expect(root.status).toBe('ok');
    expect(root.keys.map((key) => key.kid)).toEqual(['alpha']);
    expect(root.rejectedKeys.map((key) => [key.kid, key.reason])).toEqual([
      ['gamma', 'private-key'],
      ['p384', 'unsupported-key'],
      ['ed25519', 'unsupported-key'],
      ['rsa', 'unsupported-key'],
      ['hmac', 'private-key'],
      [undefined, 'missing-kid'],
      ['wrong-alg', 'invalid-key'],
      ['wrong-use', 'invalid-key'],
      ['wrong-ops', 'invalid-key'],
      ['off-curve', 'invalid-key'],
      ['bad-meta', 'invalid-key'],
      [undefined, 'invalid-key'],
    ]);
    expect(root.warnings).toHaveLength(12);
    expect(root.warnings[0]).toMatch(/key "gamma" carries private or secret key material \("d"\)/);
    expect(selectTrustedKey(root, 'gamma', { at })).toMatchObject({
      kind: 'untrusted-key',
      reason: 'unknown-kid',
    });
    expect(selectTrustedKey(root, 'p384', { at })).toMatchObject({
      kind: 'untrusted-key',
      reason: 'unknown-kid',
    });
  });

  it('is unavailable when every key is dropped', async () => {
    const p384 = await makeKey('p384', 'P-384');
    server.route('/only-p384', json(jwks(p384)));
    const root = await load('/only-p384');
    expect(codeOf(root)).toBe('ERR_NO_USABLE_KEYS');
    expect(selectTrustedKey(root, 'p384', { at })).toMatchObject({
      kind: 'trust-root-unavailable',
    });
  });

  it('refuses a duplicate kid, even one copy of which is valid, and says so', async () => {
    const p384 = await makeKey('beta', 'P-384');
    server.route('/dupes', json(jwks(alpha, beta, { ...gamma.jwk, kid: 'beta' }, { ...p384.jwk })));
    const root = await load('/dupes');
    expect(root.status).toBe('ok');
    expect(root.keys.map((key) => key.kid)).toEqual(['alpha']);
    expect(root.warnings.join('\n')).toContain(
      'lists kid "beta" 3 times; that kid is refused as ambiguous',
    );
    expect(selectTrustedKey(root, 'beta', { at })).toMatchObject({
      kind: 'untrusted-key',
      reason: 'ambiguous-kid',
    });
  });
});

describe('pins', () => {
  it('trusts only pinned keys; the others are not-pinned', async () => {
    const root = await load('/jwks.json', { pins: [beta.thumbprint] });
    expect(root.status).toBe('ok');
    expect(root.source.pins).toEqual([beta.thumbprint]);
    expect(root.keys.map((key) => key.kid)).toEqual(['beta']);
    expect(selectTrustedKey(root, 'alpha', { at })).toMatchObject({
      kind: 'untrusted-key',
      reason: 'not-pinned',
    });
    expect(selectTrustedKey(root, 'beta', { at })).toMatchObject({ kind: 'ok' });
    expect(root.warnings.join('\n')).toMatch(/1 key\(s\) not pinned and not trusted: "alpha"/);
  });

  it('reads comma-separated pins from PACKWARDEN_PACK_JWKS_PINS or its alias', async () => {
    const root = await loadPackTrustRoot({
      env: {
        AGENTHIPPO_PACK_JWKS_URL: server.url('/jwks.json'),
        AGENTHIPPO_PACK_JWKS_PINS: ` ${alpha.thumbprint} , ${gamma.thumbprint},`,
      },
      cacheDir: false,
    });
    expect(root.keys.map((key) => key.kid)).toEqual(['alpha']);
    expect(root.warnings.join('\n')).toContain(`pin ${gamma.thumbprint} matches no trusted key`);
  });

  it('explicit pins replace the environment pins', async () => {
    const root = await load('/jwks.json', {
      pins: [alpha.thumbprint],
      env: { PACKWARDEN_PACK_JWKS_PINS: beta.thumbprint },
    });
    expect(root.keys.map((key) => key.kid)).toEqual(['alpha']);
    expect(root.warnings).toContain(
      'PACKWARDEN_PACK_JWKS_PINS is ignored: the pins option takes precedence.',
    );
  });

  it('is unavailable when no key matches any pin', async () => {
    const root = await load('/jwks.json', { pins: [gamma.thumbprint] });
    expect(codeOf(root)).toBe('ERR_PIN_MISMATCH');
    expect(root.keys).toEqual([]);
  });

  it('is unavailable for a malformed pin, without a request', async () => {
    const net = forbiddenFetch();
    for (const pin of [
      'abc',
      `${alpha.thumbprint}=`,
      `sha256:${alpha.thumbprint}`,
      alpha.thumbprint.slice(0, 42) + 'B',
    ]) {
      const root = await load('/jwks.json', { pins: [pin], fetch: net.fetch });
      expect(codeOf(root), pin).toBe('ERR_PIN_INVALID');
    }
    expect(net.calls()).toBe(0);
  });
});
