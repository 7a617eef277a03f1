import { readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { loadPackTrustRoot, selectTrustedKey } from '@packwarden/trust-root';
import { describe, expect, it } from 'vitest';
import { installPack, openStore, type StoreError } from '../src/index.js';
import {
  listTree,
  makeTar,
  padBlock,
  paxBody,
  rawHeader,
  startServer,
  tempDir,
} from './helpers.js';

// A replay of the AgentHippo store: the index on one host (raw.githubusercontent.com), the
// GitHub API answering a tarball request with 302 to codeload.github.com (another origin), and
// a repository tarball in git-archive's format: a global PAX header whose comment is the
// commit, then everything under `<owner>-<repo>-<sha7>/`.
const fixture = (path: string) =>
  fileURLToPath(new URL(`../../../fixtures/agenthippo/${path}`, import.meta.url));
const COMMIT = '3f9c2a1b7d4e5f60718293a4b5c6d7e8f9012345';
const TOP = `agenthippoai-agenthippo-store-${COMMIT.slice(0, 7)}`;
const TOKEN = 'ghp_secret_token_value';

const INDEX = {
  version: 1,
  artifacts: [
    {
      id: 'a1',
      type: 'agent-pack',
      slug: 'joker1',
      displayName: 'Joker',
      description: 'always start your response with a joke',
      tags: ['fun'],
      author: 'AgentHippo',
      latestVersion: '0.1.3',
      updatedAt: '2026-08-01T00:00:00Z',
    },
    {
      id: 'a2',
      type: 'skill',
      slug: 'web-search',
      displayName: 'Web search',
      latestVersion: '1.0.0',
    },
    {
      id: 'a3',
      type: 'mcp',
      slug: 'github',
      latestVersion: '2.1.0',
      description: null,
      tags: null,
    },
    { id: 'bad1', type: 'agent-pack', slug: '../evil', latestVersion: '1.0.0' },
    { id: 'bad2', type: 'widget', slug: 'thing', latestVersion: '1.0.0' },
    { id: 'bad3', type: 'skill', slug: 'nover', latestVersion: 'latest' },
    'not an object',
  ],
};

async function repoTarball(): Promise<Buffer> {
  const globalHeader = paxBody({ comment: COMMIT });
  const entries = await makeTar([
    { name: `${TOP}/`, type: 'directory' },
    { name: `${TOP}/README.md`, content: '# store\n' },
    { name: `${TOP}/README-link`, type: 'symlink', linkname: 'README.md' }, // outside the pack: skipped
    { name: `${TOP}/agent-packs/`, type: 'directory' },
    { name: `${TOP}/agent-packs/joker1/`, type: 'directory' },
    {
      name: `${TOP}/agent-packs/joker1/agent.yaml`,
      content: readFileSync(fixture('joker1/agent.yaml')),
    },
    {
      name: `${TOP}/agent-packs/joker1/pack.sig`,
      content: readFileSync(fixture('joker1/pack.sig')),
    },
    { name: `${TOP}/agent-packs/joker10/`, type: 'directory' },
    { name: `${TOP}/agent-packs/joker10/agent.yaml`, content: 'not this one' },
    { name: `${TOP}/skills/web-search/SKILL.md`, content: '# skill\n' },
  ]);
  return gzipSync(
    Buffer.concat([
      rawHeader({ name: 'pax_global_header', typeflag: 'g', size: globalHeader.length }),
      padBlock(globalHeader),
      entries,
    ]),
  );
}

async function replay(options: { tarball?: Buffer } = {}) {
  const tarball = options.tarball ?? (await repoTarball());
  const codeload = await startServer((req, res) => {
    if (
      req.url === '/agenthippoai/agenthippo-store/legacy.tar.gz/refs/tags/agent-packs/joker1/v0.1.3'
    ) {
      res
        .writeHead(200, { 'content-type': 'application/x-gzip', 'content-length': tarball.length })
        .end(tarball);
    } else res.writeHead(404).end('{"message":"Not Found"}');
  });
  const api = await startServer((req, res) => {
    const match = /^\/repos\/agenthippoai\/agenthippo-store\/tarball\/(.+)$/.exec(req.url ?? '');
    if (match && decodeURIComponent(match[1]!) === 'agent-packs/joker1/v0.1.3') {
      res
        .writeHead(302, {
          location: `${codeload.url}/agenthippoai/agenthippo-store/legacy.tar.gz/refs/tags/agent-packs/joker1/v0.1.3`,
        })
        .end();
    } else if (req.url?.includes('/tarball/agent-packs/loop/')) {
      res.writeHead(302, { location: req.url }).end();
    } else res.writeHead(404).end('{"message":"Not Found"}');
  });
  const raw = await startServer((req, res) => {
    if (req.url === '/agenthippoai/agenthippo-store/main/store-index.json')
      res.writeHead(200, { etag: '"v1"' }).end(JSON.stringify(INDEX));
    else res.writeHead(404).end();
  });
  const env = {
    PACKWARDEN_STORE_URL: `${raw.url}/agenthippoai/agenthippo-store/main/store-index.json`,
    PACKWARDEN_GITHUB_API_URL: api.url,
    AGENTHIPPO_STORE_REPO: 'agenthippoai/agenthippo-store',
    GH_TOKEN: TOKEN,
  };
  return { codeload, api, raw, env };
}

describe('AgentHippo store (local replay)', () => {
  it('reads store-index.json leniently: bad rows are reported and skipped', async () => {
    const { env } = await replay();
    const store = await openStore({ env, cacheDir: false });
    expect(store.kind).toBe('agenthippo');
    expect(store.list().map((a) => `${a.type}/${a.slug}@${a.latestVersion}`)).toEqual([
      'mcp/github@2.1.0',
      'pack/joker1@0.1.3',
      'skill/web-search@1.0.0',
    ]);
    expect(store.problems.map((p) => p.row)).toEqual([3, 4, 5, 6]);
    expect(store.problems[1]!.message).toMatch(/widget/);
    expect(store.info({ type: 'pack', slug: 'joker1' })).toEqual({
      type: 'pack',
      slug: 'joker1',
      displayName: 'Joker',
      description: 'always start your response with a joke',
      tags: ['fun'],
      author: 'AgentHippo',
      latestVersion: '0.1.3',
      updatedAt: '2026-08-01T00:00:00Z',
    });
    expect(store.search('joke').map((a) => a.slug)).toEqual(['joker1']);
    expect(store.search('web', { type: 'skill' }).map((a) => a.slug)).toEqual(['web-search']);
    expect(store.search('web', { type: 'pack' })).toEqual([]);
    const resolved = store.resolve({ type: 'pack', slug: 'joker1' });
    expect(resolved.source).toMatchObject({
      kind: 'github-tarball',
      tag: 'agent-packs/joker1/v0.1.3',
      folder: 'agent-packs/joker1',
    });
  });

  it('installs the pack subfolder from the tag tarball; the token reaches the API host only, never the redirect target', async () => {
    const { env, api, codeload, raw } = await replay();
    const home = await tempDir();
    const store = await openStore({ env, cacheDir: false });
    const result = await installPack(store, { type: 'pack', slug: 'joker1' }, { home, env });
    expect(result).toMatchObject({
      slug: 'joker1',
      version: '0.1.3',
      commit: COMMIT,
      replaced: false,
    });
    expect(await listTree(result.dir)).toEqual(['agent.yaml', 'pack.sig']);
    expect(api.requests).toHaveLength(1);
    expect(api.requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(codeload.requests).toHaveLength(1);
    expect(codeload.requests[0]!.headers.authorization).toBeUndefined();
    expect(JSON.stringify(codeload.requests[0]!.headers)).not.toContain(TOKEN);
    expect(raw.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('verifies the published joker1 as digest-unsupported, which --require-signed refuses', async () => {
    const { env } = await replay();
    const home = await tempDir();
    const store = await openStore({ env, cacheDir: false });
    const root = await loadPackTrustRoot({
      keysFile: fixture('keys.json'),
      env: {},
      cacheDir: false,
    });
    const selectKey = (kid: string, at: Date) => selectTrustedKey(root, kid, { at });
    const error = await installPack(
      store,
      { type: 'pack', slug: 'joker1' },
      { home, env, requireSigned: true, selectKey },
    ).then(
      () => undefined,
      (e: unknown) => e as StoreError,
    );
    expect(error?.code).toBe('ERR_SIGNATURE_REFUSED');
    expect(error?.verification).toMatchObject({
      kind: 'digest-unsupported',
      pack: 'joker1',
      packVersion: '0.1.3',
      kid: 'store-release-2026-08',
    });
    expect(await readdir(join(home, 'agents', 'joker1'))).toEqual([]);
    // Without the requirement it installs, and reports what verification said.
    const ok = await installPack(store, { type: 'pack', slug: 'joker1' }, { home, env, selectKey });
    expect(ok.verification?.kind).toBe('digest-unsupported');
  });

  it('refuses a missing tag, a redirect loop, and a tarball without the pack folder', async () => {
    const { env } = await replay();
    const home = await tempDir();
    const store = await openStore({ env, cacheDir: false });
    const missing = await installPack(
      store,
      { type: 'pack', slug: 'joker1', version: '9.9.9' },
      { home, env },
    ).catch((e: StoreError) => e);
    expect((missing as StoreError).code).toBe('ERR_STORE_HTTP_STATUS');
    const loop = await installPack(
      store,
      { type: 'pack', slug: 'loop', version: '1.0.0' },
      { home, env },
    ).catch((e: StoreError) => e);
    expect((loop as StoreError).code).toBe('ERR_ARTIFACT_NOT_FOUND');
    const looping = await import('../src/http.js').then(({ request }) =>
      request(
        new URL(
          `${env.PACKWARDEN_GITHUB_API_URL}/repos/agenthippoai/agenthippo-store/tarball/agent-packs/loop/v1`,
        ),
        {
          fetch,
          redirects: 'any',
          timeoutMs: 5000,
        },
      ).catch((e: StoreError) => e),
    );
    expect((looping as StoreError).code).toBe('ERR_STORE_REDIRECT');

    const other = await replay({
      tarball: gzipSync(await makeTar([{ name: `${TOP}/skills/x/SKILL.md`, content: 'x' }])),
    });
    const store2 = await openStore({ env: other.env, cacheDir: false });
    const absent = await installPack(
      store2,
      { type: 'pack', slug: 'joker1' },
      { home, env: other.env },
    ).catch((e: StoreError) => e);
    expect((absent as StoreError).code).toBe('ERR_ARCHIVE_PREFIX_NOT_FOUND');
    expect(await readdir(join(home, 'agents', 'joker1'))).toEqual([]);
  });
});
