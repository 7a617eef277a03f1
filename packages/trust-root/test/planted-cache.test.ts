import { execFile } from 'node:child_process';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadPackTrustRoot, selectTrustedKey, type PackTrustRoot } from '../src/index.js';
import { startKeyServer, type Handler, type KeyServer } from './helpers/key-server.js';
import { jwks, makeKey, tempDir, type TempDir, type TestKey } from './helpers/keys.js';

// Issue 9, finding 2: with `--jwks URL` and no pin, a fresh key set written into the cache folder
// (the sandbox's state folder) made an attacker-signed pack verified. A cache entry is now
// believed only when it carries a MAC under the cache key (by default only this process holds
// it) and was fetched for the same URL and pins.

const run = promisify(execFile);
const builtEntry = new URL('../dist/index.js', import.meta.url).href;

let release: TestKey;
let attacker: TestKey;
let server: KeyServer;
let dir: TempDir;
let handler: Handler;
let path = '/jwks';
let counter = 0;

beforeAll(async () => {
  [release, attacker] = await Promise.all([makeKey('release'), makeKey('attacker')]);
  server = await startKeyServer();
});
afterAll(() => server.close());
beforeEach(async () => {
  dir = await tempDir();
  counter += 1;
  path = `/jwks-${counter}`;
  server.route(path, (request, response) => handler(request, response));
  handler = serve(jwks(release));
});
afterEach(() => dir.cleanup());

function serve(body: unknown): Handler {
  return (_request, response) => {
    response
      .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=3600' })
      .end(JSON.stringify(body));
  };
}
const down: Handler = (_request, response) => {
  response.writeHead(503).end('down');
};

const at = new Date('2026-09-01T12:00:00Z');
const cacheDir = () => join(dir.path, 'state', 'packwarden', 'cache', 'trust-root');
const load = (extra: { cacheKey?: Uint8Array; pins?: string[] } = {}) =>
  loadPackTrustRoot({
    jwksUrl: server.url(path),
    env: {},
    cacheDir: cacheDir(),
    now: () => at,
    ...extra,
  });

/** What a verifier decides for a pack signed by `key`. */
const decision = (root: PackTrustRoot, key: TestKey) =>
  selectTrustedKey(root, key.kid, { at: new Date('2026-08-01T00:00:00Z') });

/** The well-formed, fresh entry the attacker writes: attacker's key set, no pins. */
function plantedFields(url: string) {
  return {
    kind: 'jwks',
    url,
    pins: [],
    body: JSON.stringify(jwks(attacker)),
    fetchedAt: at.toISOString(),
    validatedAt: at.toISOString(),
    expiresAt: new Date(at.getTime() + 3_600_000).toISOString(),
  };
}

async function plant(name: string, entry: object): Promise<string> {
  await mkdir(cacheDir(), { recursive: true, mode: 0o700 });
  const file = join(cacheDir(), name);
  await writeFile(file, JSON.stringify(entry), { mode: 0o600 });
  return file;
}

/** The file name the cache uses for `url` without pins (the naming is not a secret). */
function entryName(url: string, pins: string[] = []): string {
  const hash = createHash('sha256')
    .update(`jwks\n${url}\n${pins.join(',')}`)
    .digest('hex');
  return `jwks-${hash.slice(0, 32)}.json`;
}

/** A MAC made the way the cache makes it, but under a key the attacker chose. */
function forgedMac(fields: ReturnType<typeof plantedFields>, key: Buffer): string {
  const input = JSON.stringify([
    'packwarden-trust-root-cache',
    2,
    fields.kind,
    fields.url,
    fields.pins,
    fields.body,
    null,
    fields.fetchedAt,
    fields.validatedAt,
    fields.expiresAt,
  ]);
  return createHmac('sha256', key).update(input).digest('base64url');
}

describe('a key set planted in the cache folder is never trusted', () => {
  const plants: [string, (url: string) => [string, object]][] = [
    [
      'the entry format of earlier releases (no MAC)',
      (url) => {
        const legacy = createHash('sha256').update(`jwks\n${url}`).digest('hex').slice(0, 32);
        return [`jwks-${legacy}.json`, { version: 1, ...plantedFields(url) }];
      },
    ],
    [
      'a current entry with a MAC under the attacker’s key',
      (url) => [
        entryName(url),
        { version: 2, ...plantedFields(url), mac: forgedMac(plantedFields(url), randomBytes(32)) },
      ],
    ],
    [
      'a current entry with the MAC left out',
      (url) => [entryName(url), { version: 2, ...plantedFields(url) }],
    ],
  ];

  it.each(plants)('%s: the source is asked, the attacker key is untrusted', async (_name, make) => {
    const [name, entry] = make(server.url(path));
    await plant(name, entry);
    const root = await load();
    expect(root.status).toBe('ok');
    expect(root.delivery).toBe('network');
    expect(server.count(path)).toBe(1);
    expect(root.keys.map((key) => key.kid)).toEqual(['release']);
    expect(decision(root, attacker)).toMatchObject({
      kind: 'untrusted-key',
      reason: 'unknown-kid',
    });
    expect(decision(root, release).kind).toBe('ok');
  });

  it.each(plants)('%s, source down: unavailable, never served as stale', async (_name, make) => {
    handler = down;
    const [name, entry] = make(server.url(path));
    const file = await plant(name, entry);
    const before = await readFile(file, 'utf8');
    const root = await load();
    expect(root.status).toBe('unavailable');
    expect(root.status === 'unavailable' && root.code).toBe('ERR_HTTP_STATUS');
    expect(root.keys).toEqual([]);
    expect(decision(root, attacker).kind).toBe('trust-root-unavailable');
    // A current-format plant sits where the cache looks, and is reported as ignored.
    if (name === entryName(server.url(path))) {
      expect(root.warnings.join('\n')).toMatch(/is ignored/);
    }
    // The planted file is left as it was; nothing else appears.
    expect(await readFile(file, 'utf8')).toBe(before);
    expect(await readdir(cacheDir())).toEqual([name]);
  });

  it('an entry another process wrote (with its own key) is not trusted by this one', async () => {
    // The other process fetched while the URL served the attacker's set.
    handler = serve(jwks(attacker));
    await run(process.execPath, [
      '--input-type=module',
      '-e',
      `const { loadPackTrustRoot } = await import(${JSON.stringify(builtEntry)});
       const root = await loadPackTrustRoot({ jwksUrl: ${JSON.stringify(server.url(path))}, env: {},
         cacheDir: ${JSON.stringify(cacheDir())}, now: () => new Date(${at.getTime()}) });
       if (root.status !== 'ok') process.exit(3);`,
    ]);
    expect(await readdir(cacheDir())).toEqual([entryName(server.url(path))]);
    handler = down;
    const root = await load();
    expect(root.status).toBe('unavailable');
    expect(decision(root, attacker).kind).toBe('trust-root-unavailable');
    expect(root.warnings.join('\n')).toMatch(/this process did not write it/);
  });

  it('with a shared cacheKey, processes holding the key share the cache; others do not', async () => {
    const cacheKey = randomBytes(32);
    await run(process.execPath, [
      '--input-type=module',
      '-e',
      `const { loadPackTrustRoot } = await import(${JSON.stringify(builtEntry)});
       const root = await loadPackTrustRoot({ jwksUrl: ${JSON.stringify(server.url(path))}, env: {},
         cacheDir: ${JSON.stringify(cacheDir())}, now: () => new Date(${at.getTime()}),
         cacheKey: Buffer.from(${JSON.stringify(cacheKey.toString('hex'))}, 'hex') });
       if (root.status !== 'ok') process.exit(3);`,
    ]);
    handler = down;
    const shared = await load({ cacheKey });
    expect(shared.status).toBe('ok');
    expect(shared.delivery).toBe('cache');
    expect(shared.keys.map((key) => key.kid)).toEqual(['release']);
    expect((await load({ cacheKey: randomBytes(32) })).status).toBe('unavailable');
    expect((await load()).status).toBe('unavailable');
  });

  it('an entry fetched under other pins is not used for these pins', async () => {
    // Written by this process, with pins; then asked without pins while the source is down.
    await load({ pins: [release.thumbprint] });
    handler = down;
    expect((await load()).status).toBe('unavailable');
    expect((await load({ pins: [release.thumbprint] })).delivery).toBe('cache');
  });

  it('refuses a cacheKey shorter than 32 bytes', async () => {
    await expect(load({ cacheKey: randomBytes(16) })).rejects.toMatchObject({
      code: 'ERR_INVALID_OPTIONS',
    });
  });
});
