import { copyFile, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  loadPackTrustRoot,
  selectTrustedKey,
  type LoadPackTrustRootOptions,
  type PackTrustRoot,
} from '../src/index.js';
import { startKeyServer, type KeyServer } from './helpers/key-server.js';
import {
  clock,
  forbiddenFetch,
  jwks,
  makeKey,
  tempDir,
  type TempDir,
  type TestKey,
} from './helpers/keys.js';

// The last known good copy of a remote key set stands in for a source that cannot be reached.
// It must never trust a key that the source itself has since stopped vouching for: neither after
// the source answered with something unusable (a set that fails its pins, no usable key, a 4xx),
// nor when whoever can write the cache folder puts back a copy this process wrote earlier.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

let compromised: TestKey;
let successor: TestKey;
let server: KeyServer;
let dir: TempDir;
let path = '/keys';
let counter = 0;

type Mode = { kind: 'serve'; body: unknown } | { kind: 'status'; code: number };
let mode: Mode;

function handler(_request: IncomingMessage, response: ServerResponse): void {
  if (mode.kind === 'status') {
    response.writeHead(mode.code).end('error');
    return;
  }
  response
    .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' })
    .end(JSON.stringify(mode.body));
}

beforeAll(async () => {
  [compromised, successor] = await Promise.all([makeKey('release'), makeKey('release-next')]);
  server = await startKeyServer();
});
afterAll(() => server.close());
beforeEach(async () => {
  dir = await tempDir();
  counter += 1;
  path = `/lkg-${counter}`;
  server.route(path, handler);
  mode = { kind: 'serve', body: jwks(compromised, successor) };
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
      timeoutMs: 2000,
      ...extra,
    });
}

/** What a verifier decides for a pack the holder of `key` signed an hour before the clock. */
function decide(root: PackTrustRoot, key: TestKey, time: ReturnType<typeof clock>) {
  return selectTrustedKey(root, key.kid, { at: new Date(time.now().getTime() - HOUR) });
}

function code(root: PackTrustRoot): string | undefined {
  return root.status === 'unavailable' ? root.code : undefined;
}

describe('an answer from the source retires the last good copy', () => {
  const answers: [string, () => Mode, string, boolean][] = [
    [
      'a set that fails its pins (the operator rotated to an unpinned key)',
      () => ({ kind: 'serve', body: jwks(successor) }),
      'ERR_PIN_MISMATCH',
      true,
    ],
    [
      'a set that no longer holds any usable key (every key pulled)',
      () => ({ kind: 'serve', body: { keys: [] } }),
      'ERR_NO_USABLE_KEYS',
      false,
    ],
    [
      'HTTP 410 Gone (the key set was taken down)',
      () => ({ kind: 'status', code: 410 }),
      'ERR_HTTP_STATUS',
      false,
    ],
  ];

  it.each(answers)(
    'after %s, a later outage does not bring the removed key back',
    async (_name, answer, refusal, pinned) => {
      const time = clock();
      const load = loader(time, pinned ? { pins: [compromised.thumbprint] } : {});
      const good = await load();
      expect(decide(good, compromised, time).kind).toBe('ok');

      mode = answer();
      time.advance(10 * MINUTE);
      const refused = await load();
      expect(code(refused)).toBe(refusal);
      expect(refused.warnings.join('\n')).toMatch(/will not be served if the source fails/);
      expect(await readdir(dir.path)).toEqual([]);

      // The source now fails in a way stale-if-error covers: nothing is trusted.
      mode = { kind: 'status', code: 503 };
      time.advance(MINUTE);
      const outage = await load();
      expect(outage.status).toBe('unavailable');
      expect(code(outage)).toBe('ERR_HTTP_STATUS');
      expect(outage.stale).toBe(false);
      expect(decide(outage, compromised, time).kind).toBe('trust-root-unavailable');
    },
  );

  it.each([503, 408, 429])(
    'a retryable failure (HTTP %i) keeps the copy (control)',
    async (status) => {
      const time = clock();
      const load = loader(time, { pins: [compromised.thumbprint] });
      await load();
      mode = { kind: 'status', code: status };
      time.advance(10 * MINUTE);
      const stale = await load();
      expect(stale.stale).toBe(true);
      expect(decide(stale, compromised, time).kind).toBe('ok');
    },
  );
});

describe('a cache file rolled back to an older copy this process wrote', () => {
  it('is not served as stale: the revoked key stays revoked', async () => {
    const time = clock();
    const load = loader(time);
    expect(decide(await load(), compromised, time).kind).toBe('ok');
    const [name] = await readdir(dir.path);
    const file = join(dir.path, name ?? '');
    // Code that can write the cache folder keeps the copy that still trusts the key…
    const saved = join(dir.path, '..', `${counter}-saved.json`);
    await copyFile(file, saved);

    // …the key is revoked at the source, and this process takes the new set…
    mode = {
      kind: 'serve',
      body: jwks({ ...compromised.jwk, revoked: true }, successor),
    };
    time.advance(5 * MINUTE);
    const revoked = await load();
    expect(revoked.delivery).toBe('network');
    expect(decide(revoked, compromised, time)).toMatchObject({
      kind: 'untrusted-key',
      reason: 'revoked',
    });

    // …then puts the old copy back (same MAC: this process wrote it) and the source goes down.
    await copyFile(saved, file);
    mode = { kind: 'status', code: 503 };
    time.advance(5 * MINUTE);
    const outage = await load();
    expect(decide(outage, compromised, time).kind).not.toBe('ok');
    expect(outage.status).toBe('unavailable');
    expect(code(outage)).toBe('ERR_HTTP_STATUS');
    expect(outage.warnings.join('\n')).toMatch(/rolled-back copy/);
  });

  it('the copy that was not rolled back is still served as stale (control)', async () => {
    const time = clock();
    const load = loader(time);
    await load();
    mode = { kind: 'serve', body: jwks({ ...compromised.jwk, revoked: true }, successor) };
    time.advance(5 * MINUTE);
    await load();
    mode = { kind: 'status', code: 503 };
    time.advance(5 * MINUTE);
    const outage = await load();
    expect(outage.stale).toBe(true);
    expect(decide(outage, compromised, time)).toMatchObject({ reason: 'revoked' });
    expect(decide(outage, successor, time).kind).toBe('ok');
  });
});

describe('pins that pin nothing are refused, never read as "no pins"', () => {
  // The URL serves a key the pins are meant to keep out.
  beforeEach(() => {
    mode = { kind: 'serve', body: jwks(compromised, successor) };
  });

  it.each([
    [
      'an explicit blank pin (--pin "$UNSET"), which would replace the environment pins',
      { pins: [''] },
    ],
    ['an explicit pin of spaces', { pins: ['  '] }],
    [
      'a blank entry next to a real pin',
      { pins: ['', 'S9FC_5c2n3eZEAD1bQ_46jn24OADyXq0kITicUEUpgs'] },
    ],
  ])('%s: ERR_PIN_INVALID, without a request', async (_name, extra) => {
    const net = forbiddenFetch();
    const time = clock();
    const root = await loader(time, {
      ...extra,
      env: { PACKWARDEN_PACK_JWKS_PINS: successor.thumbprint },
      fetch: net.fetch,
    })();
    expect(code(root)).toBe('ERR_PIN_INVALID');
    expect(decide(root, compromised, time).kind).toBe('trust-root-unavailable');
    expect(net.calls()).toBe(0);
  });

  it.each([',', ' , ,', 'AGENTHIPPO:,'])(
    'PACKWARDEN_PACK_JWKS_PINS=%j: ERR_PIN_INVALID, without a request',
    async (value) => {
      const net = forbiddenFetch();
      const time = clock();
      const env = value.startsWith('AGENTHIPPO:')
        ? { AGENTHIPPO_PACK_JWKS_PINS: value.slice('AGENTHIPPO:'.length) }
        : { PACKWARDEN_PACK_JWKS_PINS: value };
      const root = await loader(time, { env, fetch: net.fetch })();
      expect(code(root)).toBe('ERR_PIN_INVALID');
      expect(decide(root, compromised, time).kind).toBe('trust-root-unavailable');
      expect(net.calls()).toBe(0);
    },
  );

  it('a trailing comma after a real pin still pins (control)', async () => {
    const time = clock();
    const root = await loader(time, {
      env: { PACKWARDEN_PACK_JWKS_PINS: `${successor.thumbprint},` },
    })();
    expect(root.status).toBe('ok');
    expect(decide(root, compromised, time)).toMatchObject({ reason: 'not-pinned' });
    expect(decide(root, successor, time).kind).toBe('ok');
  });
});

describe('a key set fetched after a copy dated ahead of the clock was retired', () => {
  // A clock running 4 minutes fast (until NTP steps it back; or another process sharing the
  // cacheKey) dates a copy ahead of the clock. Believing it, then retiring it, puts the floor past
  // that date: a set fetched afterwards must be dated past the floor too, or it is never read
  // back (no cache hit, no stale copy in an outage) until the clock catches up.
  async function retireCopyDatedAhead(time: ReturnType<typeof clock>): Promise<{
    file: string;
    retired: string;
  }> {
    time.advance(4 * MINUTE);
    expect((await loader(time)()).delivery).toBe('network');
    const [name] = await readdir(dir.path);
    const file = join(dir.path, name ?? '');
    const retired = join(dir.path, '..', `${counter}-retired.json`);
    await copyFile(file, retired);
    time.advance(-4 * MINUTE);
    expect((await loader(time)()).delivery).toBe('cache');
    // The cache is cleared, so the next load asks the source, which has taken the set down.
    await rm(file);
    mode = { kind: 'status', code: 410 };
    expect(code(await loader(time)())).toBe('ERR_HTTP_STATUS');
    return { file, retired };
  }

  it('is served from the cache, and as stale in an outage; the retired copy stays refused', async () => {
    const time = clock();
    const { file, retired } = await retireCopyDatedAhead(time);

    // The source is back, with the compromised key revoked.
    mode = { kind: 'serve', body: jwks({ ...compromised.jwk, revoked: true }, successor) };
    time.advance(MINUTE);
    expect((await loader(time)()).delivery).toBe('network');

    time.advance(30_000);
    const net = forbiddenFetch();
    const hit = await loader(time, { fetch: net.fetch })();
    expect(net.calls()).toBe(0);
    expect(hit.delivery).toBe('cache');
    expect(decide(hit, successor, time).kind).toBe('ok');

    mode = { kind: 'status', code: 503 };
    time.advance(MINUTE);
    const outage = await loader(time)();
    expect(outage.delivery).toBe('stale-cache');
    expect(decide(outage, successor, time).kind).toBe('ok');
    expect(decide(outage, compromised, time)).toMatchObject({ reason: 'revoked' });

    // The retired copy, put back while it still looks fresh, is not believed.
    await copyFile(retired, file);
    const rolledBack = await loader(time)();
    expect(rolledBack.warnings.join('\n')).toMatch(/rolled-back copy/);
    expect(decide(rolledBack, compromised, time).kind).not.toBe('ok');
  });

  it('two sets fetched before the clock catches up are still ordered: the older one put back is refused', async () => {
    const time = clock();
    const { file } = await retireCopyDatedAhead(time);

    mode = { kind: 'serve', body: jwks(compromised, successor) };
    time.advance(MINUTE);
    await loader(time)();
    const older = join(dir.path, '..', `${counter}-older.json`);
    await copyFile(file, older);

    // Still behind the retired copy's date: the source revokes the key, this process takes it.
    mode = { kind: 'serve', body: jwks({ ...compromised.jwk, revoked: true }, successor) };
    time.advance(MINUTE + 1000);
    const revoked = await loader(time)();
    expect(revoked.delivery).toBe('network');
    expect(decide(revoked, compromised, time)).toMatchObject({ reason: 'revoked' });

    await copyFile(older, file);
    mode = { kind: 'status', code: 503 };
    time.advance(MINUTE);
    const outage = await loader(time)();
    expect(outage.warnings.join('\n')).toMatch(/rolled-back copy/);
    expect(decide(outage, compromised, time).kind).not.toBe('ok');
  });
});
