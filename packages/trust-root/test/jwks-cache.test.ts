import { execFileSync } from 'node:child_process';
import {
  chmod,
  mkdir,
  readdir,
  readFile,
  rm,
  stat,
  symlink,
  writeFile,
  rename,
} from 'node:fs/promises';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  loadPackTrustRoot,
  type LoadPackTrustRootOptions,
  type PackTrustRoot,
} from '../src/index.js';
import { startKeyServer, type KeyServer } from './helpers/key-server.js';
import { clock, jwks, makeKey, tempDir, type TempDir, type TestKey } from './helpers/keys.js';

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

let alpha: TestKey;
let beta: TestKey;
let gamma: TestKey;
let server: KeyServer;
let dir: TempDir;

/** What the `/keys` route does next; tests switch it to inject faults. */
type Mode =
  | { kind: 'serve'; body: unknown; etag?: string; cacheControl?: string }
  | { kind: 'status'; code: number }
  | { kind: 'hang' }
  | { kind: 'reset' }
  | { kind: 'garbage' }
  | { kind: 'redirect' }
  | { kind: 'huge' };
let mode: Mode;
let path = '/keys';
let counter = 0;

function handler(request: IncomingMessage, response: ServerResponse): void {
  switch (mode.kind) {
    case 'serve': {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (mode.etag !== undefined) headers['etag'] = mode.etag;
      if (mode.cacheControl !== undefined) headers['cache-control'] = mode.cacheControl;
      if (mode.etag !== undefined && request.headers['if-none-match'] === mode.etag) {
        response.writeHead(304, headers).end();
        return;
      }
      response.writeHead(200, headers).end(JSON.stringify(mode.body));
      return;
    }
    case 'status':
      response.writeHead(mode.code).end('error');
      return;
    case 'hang':
      return;
    case 'reset':
      request.socket.resetAndDestroy();
      return;
    case 'garbage':
      response.writeHead(200).end('{"keys": [');
      return;
    case 'redirect':
      response.writeHead(302, { location: '/elsewhere' }).end();
      return;
    case 'huge':
      response.writeHead(200).end(Buffer.alloc(300 * 1024, 0x20));
      return;
  }
}

beforeAll(async () => {
  [alpha, beta, gamma] = await Promise.all([makeKey('alpha'), makeKey('beta'), makeKey('gamma')]);
  server = await startKeyServer();
});
afterAll(() => server.close());
beforeEach(async () => {
  dir = await tempDir();
  // A fresh route per test, so cache files never leak between tests.
  counter += 1;
  path = `/keys-${counter}`;
  server.route(path, handler);
  mode = { kind: 'serve', body: jwks(alpha, beta), etag: '"v1"', cacheControl: 'max-age=120' };
});
afterEach(() => dir.cleanup());

function loader(
  time: ReturnType<typeof clock>,
  extra: LoadPackTrustRootOptions = {},
): () => Promise<PackTrustRoot> {
  return () =>
    loadPackTrustRoot({
      jwksUrl: server.url(path),
      env: {},
      cacheDir: dir.path,
      now: time.now,
      // Long enough for a loaded machine; the hang faults wait for it in full.
      timeoutMs: 2000,
      ...extra,
    });
}

function hits(): number {
  return server.count(path);
}

function code(root: PackTrustRoot): string | undefined {
  return root.status === 'unavailable' ? root.code : undefined;
}

async function cacheFiles(): Promise<string[]> {
  return (await readdir(dir.path)).filter((name) => name.endsWith('.json'));
}

describe('freshness: Cache-Control max-age', () => {
  it('serves a fresh copy from disk without a request, then revalidates with If-None-Match', async () => {
    const time = clock();
    const load = loader(time);
    const first = await load();
    expect(first.status).toBe('ok');
    expect(first.delivery).toBe('network');
    expect(first.expiresAt?.getTime()).toBe(time.now().getTime() + 120 * SECOND);
    expect(hits()).toBe(1);

    time.advance(119 * SECOND);
    const cached = await load();
    expect(cached.status).toBe('ok');
    expect(cached.delivery).toBe('cache');
    expect(cached.stale).toBe(false);
    expect(cached.keys.map((key) => key.kid)).toEqual(['alpha', 'beta']);
    expect(hits()).toBe(1);

    time.advance(2 * SECOND);
    const revalidated = await load();
    expect(revalidated.delivery).toBe('revalidated');
    expect(revalidated.keys.map((key) => key.kid)).toEqual(['alpha', 'beta']);
    expect(hits()).toBe(2);
    expect(server.requests.at(-1)?.headers['if-none-match']).toBe('"v1"');

    // The 304 renewed the lifetime.
    time.advance(100 * SECOND);
    expect((await load()).delivery).toBe('cache');
    expect(hits()).toBe(2);
  });

  it('takes the new key set when the ETag changes', async () => {
    const time = clock();
    const load = loader(time);
    await load();
    mode = { kind: 'serve', body: jwks(gamma), etag: '"v2"', cacheControl: 'max-age=120' };
    time.advance(121 * SECOND);
    const root = await load();
    expect(root.delivery).toBe('network');
    expect(root.keys.map((key) => key.kid)).toEqual(['gamma']);
    expect(server.requests.at(-1)?.headers['if-none-match']).toBe('"v1"');
  });

  it.each([
    ['max-age=5', 60 * SECOND],
    ['max-age=0', 60 * SECOND],
    ['no-cache', 60 * SECOND],
    ['public, max-age=999999', 24 * HOUR],
    [undefined, 5 * MINUTE],
  ])('clamps Cache-Control %s to a lifetime of %i ms', async (cacheControl, lifetime) => {
    mode = {
      kind: 'serve',
      body: jwks(alpha),
      ...(cacheControl === undefined ? {} : { cacheControl }),
    };
    const time = clock();
    const load = loader(time);
    await load();
    time.advance(lifetime - SECOND);
    expect((await load()).delivery).toBe('cache');
    expect(hits()).toBe(1);
    time.advance(2 * SECOND);
    expect((await load()).delivery).toBe('network');
    expect(hits()).toBe(2);
  });

  it('writes the cache atomically: mode 0600 in a 0700 folder, no temporary files left', async () => {
    const cacheDir = join(dir.path, 'nested', 'cache');
    const time = clock();
    await loadPackTrustRoot({ jwksUrl: server.url(path), env: {}, cacheDir, now: time.now });
    const names = await readdir(cacheDir);
    expect(names).toHaveLength(1);
    expect(names[0]).toMatch(/^jwks-[0-9a-f]{32}\.json$/);
    expect((await stat(cacheDir)).mode & 0o777).toBe(0o700);
    const file = join(cacheDir, names[0] ?? '');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const entry = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    expect(entry).toMatchObject({
      version: 2,
      kind: 'jwks',
      url: server.url(path),
      pins: [],
      etag: '"v1"',
    });
    expect(entry['mac']).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(JSON.parse(entry['body'] as string)).toEqual(jwks(alpha, beta));
  });

  it('tightens an existing cache folder to 0700', async () => {
    await chmod(dir.path, 0o755);
    await loader(clock())();
    expect((await stat(dir.path)).mode & 0o777).toBe(0o700);
  });

  it('tightens a group-writable folder of this user (umask 002) to 0700, with a warning, and uses it', async () => {
    await chmod(dir.path, 0o775);
    const time = clock();
    const first = await loader(time)();
    expect(first.warnings.join('\n')).toMatch(/was mode 775; it is now 700/);
    expect((await stat(dir.path)).mode & 0o777).toBe(0o700);
    expect((await loader(time)()).delivery).toBe('cache');
  });

  it('never narrows the folder a symlinked cache folder points at', async () => {
    const target = join(dir.path, 'target');
    const link = join(dir.path, 'link');
    await mkdir(target, { mode: 0o755 });
    await chmod(target, 0o775);
    await symlink(target, link);
    const root = await loader(clock(), { cacheDir: link })();
    expect(root.status).toBe('ok');
    expect(root.warnings.join('\n')).toMatch(/not written to .*: the folder is a symlink/);
    expect((await stat(target)).mode & 0o777).toBe(0o775);
    expect(await readdir(target)).toEqual([]);
  });

  it('defaults the cache to $PACKWARDEN_HOME/cache/trust-root', async () => {
    const time = clock();
    await loadPackTrustRoot({
      jwksUrl: server.url(path),
      env: { PACKWARDEN_HOME: dir.path },
      now: time.now,
    });
    expect(await readdir(join(dir.path, 'cache', 'trust-root'))).toHaveLength(1);
    await loadPackTrustRoot({
      jwksUrl: server.url(path),
      env: { AGENTHIPPO_HOME: join(dir.path, 'ah') },
      now: time.now,
    });
    expect(await readdir(join(dir.path, 'ah', 'cache', 'trust-root'))).toHaveLength(1);
  });

  it('binds a cached copy to its pins: other pins never reuse it, and they are re-applied', async () => {
    const time = clock();
    await loader(time)();
    expect(hits()).toBe(1);
    // Fetched without pins: a load with pins does not take that copy, it asks the network.
    const pinned = await loader(time, { pins: [beta.thumbprint] })();
    expect(pinned.delivery).toBe('network');
    expect(pinned.keys.map((key) => key.kid)).toEqual(['beta']);
    expect(hits()).toBe(2);
    // The same pins again: their own copy.
    expect((await loader(time, { pins: [beta.thumbprint] })()).delivery).toBe('cache');
    expect(hits()).toBe(2);
    const mismatch = await loader(time, { pins: [gamma.thumbprint] })();
    expect(code(mismatch)).toBe('ERR_PIN_MISMATCH');
    expect(hits()).toBe(3);
    expect(await cacheFiles()).toHaveLength(2);
  });
});

describe('stale-if-error', () => {
  const faults: [string, Mode, string][] = [
    ['HTTP 500', { kind: 'status', code: 500 }, 'ERR_HTTP_STATUS'],
    ['HTTP 503', { kind: 'status', code: 503 }, 'ERR_HTTP_STATUS'],
    ['a timeout', { kind: 'hang' }, 'ERR_FETCH_TIMEOUT'],
    ['a connection reset', { kind: 'reset' }, 'ERR_FETCH_FAILED'],
  ];

  it.each(faults)(
    'serves the last good copy as stale on %s within the bound, not beyond it',
    async (_name, fault, failure) => {
      const time = clock();
      const load = loader(time);
      const good = await load();
      mode = fault;
      time.advance(2 * HOUR);
      const stale = await load();
      expect(stale.status).toBe('ok');
      expect(stale.stale).toBe(true);
      expect(stale.delivery).toBe('stale-cache');
      expect(stale.keys.map((key) => key.kid)).toEqual(['alpha', 'beta']);
      expect(stale.validatedAt).toEqual(good.validatedAt);
      expect(stale.warnings.join('\n')).toMatch(
        /serving a stale copy of JWKS .* last confirmed .* \(2h ago, bound 3d\)/,
      );

      time.advance(70 * HOUR - 1); // 72 h minus 1 ms after the last confirmation
      expect((await load()).stale).toBe(true);
      time.advance(2);
      const expired = await load();
      expect(expired.status).toBe('unavailable');
      expect(code(expired)).toBe(failure);
      expect(expired.status === 'unavailable' && expired.retryable).toBe(true);
      expect(expired.status === 'unavailable' && expired.reason).toMatch(
        /beyond the 3d staleness bound/,
      );
      expect(expired.keys).toEqual([]);
    },
  );

  it('also serves stale when the server is gone altogether', async () => {
    const time = clock();
    const other = await startKeyServer();
    other.route('/jwks.json', (_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(jwks(alpha)));
    });
    const options = {
      jwksUrl: other.url('/jwks.json'),
      env: {},
      cacheDir: dir.path,
      now: time.now,
    };
    expect((await loadPackTrustRoot(options)).status).toBe('ok');
    await other.close();
    time.advance(HOUR);
    const root = await loadPackTrustRoot(options);
    expect(root.stale).toBe(true);
    expect(root.warnings.join('\n')).toMatch(/could not be reached/);
  });

  it('honours PACKWARDEN_PACK_JWKS_MAX_STALE and its AGENTHIPPO_ alias', async () => {
    const time = clock();
    await loader(time)();
    mode = { kind: 'status', code: 500 };
    time.advance(20 * MINUTE);
    for (const name of ['PACKWARDEN_PACK_JWKS_MAX_STALE', 'AGENTHIPPO_PACK_JWKS_MAX_STALE']) {
      expect((await loader(time, { env: { [name]: '30m' } })()).stale, name).toBe(true);
      expect(code(await loader(time, { env: { [name]: '600' } })()), name).toBe('ERR_HTTP_STATUS');
    }
    expect(
      (await loader(time, { env: { PACKWARDEN_PACK_JWKS_MAX_STALE: '1h' }, maxStaleMs: 0 })())
        .status,
    ).toBe('unavailable');
    expect(
      (await loader(time, { env: { PACKWARDEN_PACK_JWKS_MAX_STALE: '1s' }, maxStaleMs: HOUR })())
        .stale,
    ).toBe(true);
  });

  it('is unavailable when PACKWARDEN_PACK_JWKS_MAX_STALE cannot be parsed', async () => {
    const root = await loader(clock(), { env: { PACKWARDEN_PACK_JWKS_MAX_STALE: '3 days' } })();
    expect(code(root)).toBe('ERR_DURATION_INVALID');
    expect(hits()).toBe(0);
  });

  const refusals: [string, Mode, string][] = [
    ['HTTP 404', { kind: 'status', code: 404 }, 'ERR_HTTP_STATUS'],
    ['HTTP 401', { kind: 'status', code: 401 }, 'ERR_HTTP_STATUS'],
    ['a garbage body', { kind: 'garbage' }, 'ERR_KEYS_PARSE'],
    ['a redirect', { kind: 'redirect' }, 'ERR_REDIRECT_REFUSED'],
    ['an oversized body', { kind: 'huge' }, 'ERR_RESPONSE_TOO_LARGE'],
    ['a key set matching no pin', { kind: 'serve', body: jwks(gamma) }, 'ERR_PIN_MISMATCH'],
  ];

  it.each(refusals)('never serves the cache on %s', async (_name, fault, failure) => {
    const time = clock();
    const load = loader(time, { pins: [alpha.thumbprint] });
    expect((await load()).status).toBe('ok');
    mode = fault;
    time.advance(10 * MINUTE);
    const root = await load();
    expect(root.status).toBe('unavailable');
    expect(code(root)).toBe(failure);
    expect(root.stale).toBe(false);
    expect(root.keys).toEqual([]);
  });

  it('never takes a set that failed its pins, and no longer serves the copy from before', async () => {
    const time = clock();
    const load = loader(time, { pins: [alpha.thumbprint] });
    await load();
    mode = { kind: 'serve', body: jwks(gamma), cacheControl: 'max-age=60' };
    time.advance(10 * MINUTE);
    expect(code(await load())).toBe('ERR_PIN_MISMATCH');
    // The source stopped vouching for alpha: an outage must not bring it back (last-known-good.test.ts).
    mode = { kind: 'status', code: 503 };
    const outage = await load();
    expect(outage.stale).toBe(false);
    expect(code(outage)).toBe('ERR_HTTP_STATUS');
    expect(outage.keys).toEqual([]);
  });
});

describe('the cache is only believed when nobody else could have written it', () => {
  async function primeThenFail(time: ReturnType<typeof clock>): Promise<string> {
    await loader(time)();
    mode = { kind: 'status', code: 500 };
    time.advance(HOUR);
    const [name] = await cacheFiles();
    return join(dir.path, name ?? '');
  }

  it('ignores a group-writable cache file', async () => {
    const time = clock();
    const file = await primeThenFail(time);
    await chmod(file, 0o620);
    const root = await loader(time)();
    expect(code(root)).toBe('ERR_HTTP_STATUS');
    expect(root.warnings.join('\n')).toMatch(/writable by group or others/);
  });

  it('ignores a world-writable cache folder', async () => {
    const time = clock();
    await primeThenFail(time);
    await chmod(dir.path, 0o777);
    const root = await loader(time)();
    expect(code(root)).toBe('ERR_HTTP_STATUS');
    expect(root.warnings.join('\n')).toMatch(/folder is writable by group or others/);
  });

  it('ignores a cache file that is a symlink', async () => {
    const time = clock();
    const file = await primeThenFail(time);
    await rename(file, join(dir.path, 'elsewhere'));
    await symlink(join(dir.path, 'elsewhere'), file);
    const root = await loader(time)();
    expect(code(root)).toBe('ERR_HTTP_STATUS');
    expect(root.warnings.join('\n')).toMatch(/is ignored: it is a symlink/);
  });

  it('ignores a cache file that is a FIFO, without waiting for a writer', async () => {
    const time = clock();
    const file = await primeThenFail(time);
    await rm(file);
    execFileSync('mkfifo', ['-m', '600', file]);
    const root = await loader(time)();
    expect(code(root)).toBe('ERR_HTTP_STATUS');
    expect(root.warnings.join('\n')).toMatch(/the file is not a regular file/);
  });

  it('writes the entry mode 0600 whatever the umask, and no temporary file stays', async () => {
    const time = clock();
    const previous = process.umask(0o002);
    try {
      expect((await loader(time)()).status).toBe('ok');
    } finally {
      process.umask(previous);
    }
    const names = await readdir(dir.path);
    expect(names.filter((name) => name.endsWith('.tmp'))).toEqual([]);
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect((await stat(join(dir.path, name))).mode & 0o777).toBe(0o600);
  });

  it('ignores a corrupt cache file', async () => {
    const time = clock();
    const file = await primeThenFail(time);
    await writeFile(file, '{"version": 1, "kind": "jwks"');
    const root = await loader(time)();
    expect(code(root)).toBe('ERR_HTTP_STATUS');
    expect(root.warnings.join('\n')).toMatch(/is ignored: it is not JSON: /);
  });

  it('ignores an entry whose content was edited: its MAC no longer verifies', async () => {
    const time = clock();
    const file = await primeThenFail(time);
    const entry = JSON.parse(await readFile(file, 'utf8')) as Record<string, string>;
    await writeFile(
      file,
      JSON.stringify({
        ...entry,
        expiresAt: new Date(time.now().getTime() + 30 * 24 * HOUR).toISOString(),
      }),
      { mode: 0o600 },
    );
    const root = await loader(time)();
    expect(code(root)).toBe('ERR_HTTP_STATUS');
    expect(root.warnings.join('\n')).toMatch(/this process did not write it/);
  });

  it('ignores an entry dated in the future (written under a clock that ran ahead)', async () => {
    const ahead = clock(new Date('2026-09-11T12:00:00Z'));
    await loader(ahead)();
    mode = { kind: 'status', code: 500 };
    const root = await loader(clock())();
    expect(code(root)).toBe('ERR_HTTP_STATUS');
    expect(root.warnings.join('\n')).toMatch(/dated in the future or claims too long a lifetime/);
  });

  it('works without a cache when cacheDir is false', async () => {
    const time = clock();
    const load = loader(time, { cacheDir: false });
    await load();
    await load();
    expect(hits()).toBe(2);
    expect(await cacheFiles()).toEqual([]);
  });

  it('carries on, with a warning, when the cache cannot be written', async () => {
    const blocker = join(dir.path, 'not-a-folder');
    await writeFile(blocker, 'x');
    const root = await loader(clock(), { cacheDir: join(blocker, 'cache') })();
    expect(root.status).toBe('ok');
    expect(root.warnings.join('\n')).toMatch(/trust root cache not written/);
  });
});
