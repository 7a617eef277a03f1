/**
 * The index cache is a folder that someone else may be able to write (a shared home, a CI cache
 * restored from another job, a sandboxed pack whose state holds it). An index read from it names
 * the archive URL, its SHA-256, digest and signature, so a planted one could send installs
 * elsewhere. Each case plants a hostile entry carrying the server's current ETag (so a `304` would
 * hand it over) and asserts that the server's real index is used instead, fetched in full.
 */
import { randomBytes } from 'node:crypto';
import {
  chmod,
  chown,
  copyFile,
  mkdir,
  readdir,
  readFile,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { indexCacheFile, readCachedIndex, writeCachedIndex } from '../src/cache.js';
import { openStore } from '../src/index.js';
import { startServer, tempDir } from './helpers.js';

const ETAG = '"v1"';
const KEY = randomBytes(32);
const ATTACKER_ARCHIVE = 'https://attacker.example/evil.tgz';

function staticIndex(archive: string, sha256: string): string {
  return JSON.stringify({
    format: 'packwarden-store/1',
    artifacts: [
      {
        type: 'pack',
        slug: 'demo',
        latestVersion: '1.0.0',
        versions: [{ version: '1.0.0', archive, size: 10, sha256, digest: sha256 }],
      },
    ],
  });
}

const REAL_INDEX = staticIndex('demo-1.0.0.tgz', 'a'.repeat(64));
const PLANTED_INDEX = staticIndex(ATTACKER_ARCHIVE, 'e'.repeat(64));

/** Serves REAL_INDEX with a fixed ETag, answering `304` when it is sent back. */
async function storeServer() {
  const server = await startServer((req, res) => {
    if (req.url !== '/index.json') {
      res.writeHead(404).end();
      return;
    }
    if (req.headers['if-none-match'] === ETAG) {
      res.writeHead(304, { etag: ETAG }).end();
      return;
    }
    res.writeHead(200, { etag: ETAG, 'content-type': 'application/json' }).end(REAL_INDEX);
  });
  return { ...server, indexUrl: `${server.url}/index.json` };
}

async function archiveOf(
  url: string,
  cacheDir: string,
  /** `default`: no `cacheKey` option. */
  cacheKey: Uint8Array | 'default' = KEY,
): Promise<string> {
  const store = await openStore({
    url,
    env: {},
    cacheDir,
    ...(cacheKey === 'default' ? {} : { cacheKey }),
  });
  const resolved = store.resolve({ type: 'pack', slug: 'demo' });
  return resolved.source.url.href;
}

/** An entry as this process writes it (valid MAC under `key`), holding the planted index. */
async function plantGenuine(cacheDir: string, url: string, key: Uint8Array = KEY): Promise<void> {
  await writeCachedIndex({ dir: cacheDir, key }, { url, etag: ETAG, body: PLANTED_INDEX });
}

/** A file written by hand at the entry's place, in a 0700 folder, mode 0600. */
async function plantRaw(cacheDir: string, url: string, document: unknown): Promise<void> {
  const file = indexCacheFile(cacheDir, url);
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  await writeFile(file, JSON.stringify(document), { mode: 0o600 });
}

const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const OTHER_UID = 4242;

interface Attack {
  name: string;
  plant: (cacheDir: string, url: string) => Promise<void>;
  /** What `readCachedIndex` says about it. */
  reason: RegExp;
  rootOnly?: boolean;
}

const attacks: Attack[] = [
  {
    name: 'an entry without a MAC (an earlier release, or written by hand)',
    plant: (dir, url) => plantRaw(dir, url, { url, etag: ETAG, body: PLANTED_INDEX }),
    reason: /not a cache entry of this version/,
  },
  {
    name: 'an entry with a made-up MAC',
    plant: (dir, url) =>
      plantRaw(dir, url, { version: 2, url, etag: ETAG, body: PLANTED_INDEX, mac: 'A'.repeat(43) }),
    reason: /MAC does not verify/,
  },
  {
    name: 'an entry written under another key (another process, a CI cache of another job)',
    plant: (dir, url) => plantGenuine(dir, url, randomBytes(32)),
    reason: /MAC does not verify/,
  },
  {
    name: "a genuine entry of another URL, copied to this URL's file",
    plant: async (dir, url) => {
      const other = 'https://other-store.example/index.json';
      await plantGenuine(dir, other);
      await copyFile(indexCacheFile(dir, other), indexCacheFile(dir, url));
      await chmod(indexCacheFile(dir, url), 0o600);
    },
    reason: /written for another URL/,
  },
  {
    name: 'a genuine entry that group members can write',
    plant: async (dir, url) => {
      await plantGenuine(dir, url);
      await chmod(indexCacheFile(dir, url), 0o620);
    },
    reason: /file is writable by group or others/,
  },
  {
    name: 'a genuine entry in a folder that others can write',
    plant: async (dir, url) => {
      await plantGenuine(dir, url);
      await chmod(dirname(indexCacheFile(dir, url)), 0o777);
    },
    reason: /folder is writable by group or others/,
  },
  {
    name: 'a symlink to a genuine entry',
    plant: async (dir, url) => {
      const elsewhere = await tempDir();
      await plantGenuine(elsewhere, url);
      await mkdir(dirname(indexCacheFile(dir, url)), { recursive: true, mode: 0o700 });
      await symlink(indexCacheFile(elsewhere, url), indexCacheFile(dir, url));
    },
    reason: /symlink/,
  },
  {
    name: 'a genuine entry larger than the bound',
    plant: async (dir, url) => {
      await plantGenuine(dir, url);
      await writeFile(indexCacheFile(dir, url), ' '.repeat(17 * 1024 * 1024), { flag: 'a' });
    },
    reason: /larger than/,
  },
  {
    name: 'a genuine entry owned by another user',
    plant: async (dir, url) => {
      await plantGenuine(dir, url);
      await chown(indexCacheFile(dir, url), OTHER_UID, OTHER_UID);
    },
    reason: /file belongs to another user/,
    rootOnly: true,
  },
  {
    name: 'a genuine entry in a folder owned by another user',
    plant: async (dir, url) => {
      await plantGenuine(dir, url);
      await chown(dirname(indexCacheFile(dir, url)), OTHER_UID, OTHER_UID);
    },
    reason: /folder belongs to another user/,
    rootOnly: true,
  },
];

describe('the index cache is believed only when this process wrote it', () => {
  it('control: an entry written under the cache key answers a 304 (so the cases below can fail)', async () => {
    const server = await storeServer();
    const cacheDir = await tempDir();
    await plantGenuine(cacheDir, server.indexUrl);
    expect(await archiveOf(server.indexUrl, cacheDir)).toBe(ATTACKER_ARCHIVE);
    expect(server.requests.at(-1)?.headers['if-none-match']).toBe(ETAG);
  });

  it('an index fetched under a cacheKey is revalidated by the next open with that key', async () => {
    const server = await storeServer();
    const cacheDir = await tempDir();
    expect(await archiveOf(server.indexUrl, cacheDir)).toBe(`${server.url}/demo-1.0.0.tgz`);
    expect(server.requests.at(-1)?.headers['if-none-match']).toBeUndefined();
    expect(await archiveOf(server.indexUrl, cacheDir)).toBe(`${server.url}/demo-1.0.0.tgz`);
    expect(server.requests.at(-1)?.headers['if-none-match']).toBe(ETAG);
  });

  for (const attack of attacks) {
    it.skipIf(attack.rootOnly === true && !asRoot)(
      `${attack.name}: ignored, the real index is fetched in full`,
      async () => {
        const server = await storeServer();
        const cacheDir = await tempDir();
        await attack.plant(cacheDir, server.indexUrl);
        const lookup = await readCachedIndex({ dir: cacheDir, key: KEY }, server.indexUrl);
        expect(lookup.kind).toBe('refused');
        expect(lookup.kind === 'refused' && lookup.reason).toMatch(attack.reason);

        expect(await archiveOf(server.indexUrl, cacheDir)).toBe(`${server.url}/demo-1.0.0.tgz`);
        // Not even revalidated: the refused entry's ETag is never sent.
        expect(server.requests).toHaveLength(1);
        expect(server.requests[0]?.headers['if-none-match']).toBeUndefined();
      },
    );
  }

  it('without a cacheKey the index cache is neither written nor read (no later process could believe it)', async () => {
    const server = await storeServer();
    const cacheDir = await tempDir();
    for (let run = 0; run < 2; run += 1) {
      expect(await archiveOf(server.indexUrl, cacheDir, 'default')).toBe(
        `${server.url}/demo-1.0.0.tgz`,
      );
      expect(server.requests.at(-1)?.headers['if-none-match']).toBeUndefined();
    }
    expect(await readdir(cacheDir)).not.toContain('index');

    // Not even an authentic entry of some key is consulted.
    await plantGenuine(cacheDir, server.indexUrl);
    expect(await archiveOf(server.indexUrl, cacheDir, 'default')).toBe(
      `${server.url}/demo-1.0.0.tgz`,
    );
    expect(server.requests.at(-1)?.headers['if-none-match']).toBeUndefined();
  });

  it('a cacheKey shorter than 32 bytes is ERR_INVALID_ARGUMENT', async () => {
    const error = await openStore({
      url: 'https://store.example/index.json',
      env: {},
      cacheKey: new Uint8Array(16),
    }).catch((e: unknown) => e as { code?: string });
    expect((error as { code?: string }).code).toBe('ERR_INVALID_ARGUMENT');
  });
});

describe('the index cache folder', () => {
  it("this user's group-writable folder (umask 002) is narrowed to 0700 with a warning, and then used", async () => {
    const server = await storeServer();
    const cacheDir = await tempDir();
    const folder = join(cacheDir, 'index');
    await mkdir(folder, { mode: 0o700 });
    await chmod(folder, 0o775);

    const first = await openStore({ url: server.indexUrl, env: {}, cacheDir, cacheKey: KEY });
    expect(first.warnings.join('\n')).toMatch(/was mode 775; it is now 700/);
    expect((await stat(folder)).mode & 0o777).toBe(0o700);

    const second = await openStore({ url: server.indexUrl, env: {}, cacheDir, cacheKey: KEY });
    expect(server.requests.at(-1)?.headers['if-none-match']).toBe(ETAG);
    expect(second.warnings).toEqual([]);
  });

  it('a group-writable folder holding an entry: the refusal is a store warning, the folder is narrowed', async () => {
    const server = await storeServer();
    const cacheDir = await tempDir();
    await plantGenuine(cacheDir, server.indexUrl);
    const folder = dirname(indexCacheFile(cacheDir, server.indexUrl));
    await chmod(folder, 0o775);
    const store = await openStore({ url: server.indexUrl, env: {}, cacheDir, cacheKey: KEY });
    expect(store.resolve({ type: 'pack', slug: 'demo' }).source.url.href).toBe(
      `${server.url}/demo-1.0.0.tgz`,
    );
    expect(store.warnings).toEqual([
      expect.stringMatching(/is ignored: the folder is writable by group or others \(mode 775\)/),
      expect.stringMatching(/was mode 775; it is now 700/),
    ]);
  });

  it('a symlinked index folder is neither narrowed nor written through', async () => {
    const server = await storeServer();
    const cacheDir = await tempDir();
    const elsewhere = await tempDir();
    await chmod(elsewhere, 0o775);
    await symlink(elsewhere, join(cacheDir, 'index'));
    const store = await openStore({ url: server.indexUrl, env: {}, cacheDir, cacheKey: KEY });
    expect(store.list()).toHaveLength(1);
    expect(store.warnings.join('\n')).toMatch(/not cached in .*: the folder is a symlink/);
    expect((await stat(elsewhere)).mode & 0o777).toBe(0o775);
    expect(await readdir(elsewhere)).toEqual([]);
  });

  it('an entry read with the strict JSON parser: a member named twice is refused', async () => {
    const server = await storeServer();
    const cacheDir = await tempDir();
    await plantGenuine(cacheDir, server.indexUrl);
    const file = indexCacheFile(cacheDir, server.indexUrl);
    // A last-wins reader sees the authentic entry; a first-wins one sees another body.
    const genuine = await readFile(file, 'utf8');
    await writeFile(file, `{"body":${JSON.stringify(REAL_INDEX)},${genuine.slice(1)}`, {
      mode: 0o600,
    });
    const lookup = await readCachedIndex({ dir: cacheDir, key: KEY }, server.indexUrl);
    expect(lookup.kind === 'refused' && lookup.reason).toMatch(/repeats the member "body"/);
    const store = await openStore({ url: server.indexUrl, env: {}, cacheDir, cacheKey: KEY });
    expect(store.warnings.join('\n')).toMatch(/repeats the member "body"/);
    expect(server.requests[0]?.headers['if-none-match']).toBeUndefined();
  });
});
