import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { classifyTrustRoot, loadPackTrustRoot, TRUST_ROOT_CONFIG_CODES } from '../src/index.js';
import { forbiddenFetch, jwks, makeKey, tempDir, type TempDir } from './helpers/keys.js';

let dir: TempDir;
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(() => dir.cleanup());

const load = (options: Parameters<typeof loadPackTrustRoot>[0]) =>
  loadPackTrustRoot({ env: {}, cacheDir: false, fetch: forbiddenFetch().fetch, ...options });

describe('classifyTrustRoot', () => {
  it('reports none when nothing is configured, never config or outage', async () => {
    expect(classifyTrustRoot(await load({}))).toBe('none');
  });

  it('reports ok for a readable keys file', async () => {
    const key = await makeKey('alpha');
    const file = join(dir.path, 'keys.json');
    await writeFile(file, JSON.stringify(jwks(key)));
    expect(classifyTrustRoot(await load({ keysFile: file }))).toBe('ok');
  });

  it.each([
    ['a missing keys file', { keysFile: '/nonexistent/keys.json' }, 'ERR_KEYS_FILE_READ'],
    [
      'a plain-HTTP JWKS URL off loopback',
      { jwksUrl: 'http://example.com/jwks' },
      'ERR_URL_INSECURE',
    ],
    ['a malformed pin', { jwksUrl: 'https://example.com/jwks', pins: ['nope'] }, 'ERR_PIN_INVALID'],
  ] as const)('reports config for %s', async (_label, options, code) => {
    const root = await load(options);
    expect(root).toMatchObject({ status: 'unavailable', code });
    expect(classifyTrustRoot(root)).toBe('config');
  });

  it('reports config for a keys file repeating a member', async () => {
    const file = join(dir.path, 'keys.json');
    await writeFile(file, '{"release": "x", "release": "y"}');
    const root = await load({ keysFile: file });
    expect(root).toMatchObject({ status: 'unavailable', code: 'ERR_KEYS_DUPLICATE_MEMBER' });
    expect(classifyTrustRoot(root)).toBe('config');
  });

  it('reports outage when a configured source cannot be reached', async () => {
    // A loopback port nothing listens on: a real refused connection.
    const server = createServer();
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const { port } = server.address() as AddressInfo;
    await new Promise((done) => server.close(done));
    const root = await load({
      jwksUrl: `http://127.0.0.1:${port}/jwks.json`,
      fetch: globalThis.fetch,
    });
    expect(root).toMatchObject({ status: 'unavailable', code: 'ERR_FETCH_FAILED' });
    expect(classifyTrustRoot(root)).toBe('outage');
  });

  it('never counts a retryable code as configuration', () => {
    for (const code of ['ERR_FETCH_FAILED', 'ERR_FETCH_TIMEOUT', 'ERR_HTTP_STATUS'] as const)
      expect(TRUST_ROOT_CONFIG_CODES.has(code)).toBe(false);
  });
});
