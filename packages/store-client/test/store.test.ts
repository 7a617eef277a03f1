import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  openStore,
  parseArtifactRef,
  formatArtifactRef,
  DEFAULT_STORE_URL,
  type StoreError,
} from '../src/index.js';
import { serveDir, tempDir } from './helpers.js';

const version = (v: string) => ({
  version: v,
  archive: `x-${v}.tgz`,
  size: 10,
  sha256: 'a'.repeat(64),
  digest: 'b'.repeat(64),
});

describe('parseArtifactRef', () => {
  it('parses every alias', () => {
    expect(parseArtifactRef('pack/code-reviewer')).toEqual({ type: 'pack', slug: 'code-reviewer' });
    expect(parseArtifactRef('packs/x@1.2.0')).toEqual({
      type: 'pack',
      slug: 'x',
      version: '1.2.0',
    });
    expect(parseArtifactRef('agent-packs/x@v1.2.0-rc.1')).toEqual({
      type: 'pack',
      slug: 'x',
      version: '1.2.0-rc.1',
    });
    expect(parseArtifactRef('skill/web')).toEqual({ type: 'skill', slug: 'web' });
    expect(parseArtifactRef('skills/web')).toEqual({ type: 'skill', slug: 'web' });
    expect(parseArtifactRef('mcp/github@2.0.0')).toEqual({
      type: 'mcp',
      slug: 'github',
      version: '2.0.0',
    });
    expect(formatArtifactRef({ type: 'pack', slug: 'x', version: '1.0.0' })).toBe('pack/x@1.0.0');
  });

  it.each([
    'code-reviewer',
    'widget/x',
    'pack/',
    'pack/X',
    'pack/../x',
    'pack/a/b',
    'pack/x@latest',
    'pack/x@1',
    'pack/x@',
    `pack/${'a'.repeat(65)}`,
    'constructor/x',
  ])('refuses %j with ERR_REF_INVALID', (ref) => {
    expect(() => parseArtifactRef(ref)).toThrow(
      expect.objectContaining({ code: 'ERR_REF_INVALID' }),
    );
  });
});

describe('openStore: static index', () => {
  it('parses rows leniently: bad rows and versions are reported and skipped, never fatal', async () => {
    const dir = await tempDir();
    await writeFile(
      join(dir, 'index.json'),
      JSON.stringify({
        format: 'packwarden-store/1',
        artifacts: [
          {
            type: 'pack',
            slug: 'good',
            description: 'A good pack',
            tags: ['review'],
            latestVersion: '1.0.0',
            versions: [version('1.0.0'), version('0.1.0')],
          },
          { type: 'pack', slug: 'Bad Slug', latestVersion: '1.0.0', versions: [version('1.0.0')] },
          {
            type: 'pack',
            slug: 'half',
            latestVersion: '2.0.0',
            versions: [version('2.0.0'), { ...version('1.0.0'), sha256: 'nope' }],
          },
          { type: 'pack', slug: 'stale', latestVersion: '9.0.0', versions: [version('1.0.0')] },
          { type: 'pack', slug: 'empty', latestVersion: '1.0.0', versions: [] },
          42,
        ],
      }),
    );
    const store = await openStore({ url: dir, env: {}, cacheDir: false });
    expect(store.kind).toBe('static');
    expect(store.list().map((a) => a.slug)).toEqual(['good', 'half', 'stale']);
    expect(store.problems.map((p) => p.row)).toEqual([1, 2, 3, 4, 5]);
    expect(store.problems[1]!.message).toMatch(/versions\.1.*sha256/);
    expect(store.info({ type: 'pack', slug: 'stale' })!.latestVersion).toBe('1.0.0');
    expect(store.info({ type: 'pack', slug: 'half' })!.versions).toEqual(['2.0.0']);
    expect(store.search('review').map((a) => a.slug)).toEqual(['good']);
    expect(store.search('GOOD pack').map((a) => a.slug)).toEqual(['good']);
    expect(store.list({ type: 'skill' })).toEqual([]);
  });

  it('refuses documents that are not a store index, and oversized ones', async () => {
    const dir = await tempDir();
    const server = await serveDir(dir);
    const cases: [string, string][] = [
      ['{"format":"other/1","artifacts":[]}', 'ERR_STORE_INDEX_INVALID'],
      ['[1,2]', 'ERR_STORE_INDEX_INVALID'],
      ['<html>', 'ERR_STORE_INDEX_INVALID'],
      ['{"version":1}', 'ERR_STORE_INDEX_INVALID'],
      [
        JSON.stringify({ version: 1, artifacts: new Array(10_001).fill(0) }),
        'ERR_STORE_INDEX_TOO_LARGE',
      ],
      [
        `{"version":1,"artifacts":[],"pad":"${'x'.repeat(9 * 1024 * 1024)}"}`,
        'ERR_STORE_INDEX_TOO_LARGE',
      ],
    ];
    for (const [i, [body, code]] of cases.entries()) {
      await writeFile(join(dir, `i${i}.json`), body);
      for (const url of [`${server.url}/i${i}.json`, join(dir, `i${i}.json`)]) {
        const error = await openStore({ url, env: {}, cacheDir: false }).catch(
          (e: StoreError) => e,
        );
        expect((error as StoreError).code, `${i} ${url}`).toBe(code);
      }
    }
    expect(
      (
        (await openStore({ url: `${server.url}/missing.json`, env: {}, cacheDir: false }).catch(
          (e: StoreError) => e,
        )) as StoreError
      ).code,
    ).toBe('ERR_STORE_HTTP_STATUS');
  });

  it('takes the URL from PACKWARDEN_STORE_URL / AGENTHIPPO_STORE_URL, else the AgentHippo default', async () => {
    const dir = await tempDir();
    await writeFile(
      join(dir, 'index.json'),
      JSON.stringify({ format: 'packwarden-store/1', artifacts: [] }),
    );
    const a = await openStore({ env: { AGENTHIPPO_STORE_URL: dir }, cacheDir: false });
    expect(a.url).toBe(`file://${dir}/index.json`);
    expect(DEFAULT_STORE_URL).toMatch(/^https:\/\/.*store-index\.json$/);
    let seen = '';
    const fake = (async (url: URL | string) => {
      seen = String(url);
      return new Response(JSON.stringify({ version: 1, artifacts: [] }), { status: 200 });
    }) as typeof fetch;
    const b = await openStore({ env: {}, fetch: fake, cacheDir: false });
    expect(seen).toBe(DEFAULT_STORE_URL);
    expect(b.kind).toBe('agenthippo');
  });
});
