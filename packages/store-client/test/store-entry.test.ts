import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { modulesLoadedBy } from '../../../scripts/modules-loaded.js';
import { tempDir } from './helpers.js';

// The built entries (global-setup builds dist/ when a source is newer).
const dist = fileURLToPath(new URL('../dist/', import.meta.url));

/**
 * Imports `entry` in a fresh Node process whose module hooks log every module it loads, then
 * lists a local static store through it. Returns the loaded URLs and what the store listed.
 */
async function loadInChild(entry: string): Promise<{ urls: string[]; listed: unknown }> {
  const dir = await tempDir('store-entry-');
  const store = join(dir, 'store');
  await mkdir(store);
  await writeFile(
    join(store, 'index.json'),
    JSON.stringify({
      format: 'packwarden-store/1',
      artifacts: [{ type: 'engine', slug: 'echo', latestVersion: '1.0.0', versions: [] }],
    }),
  );
  const script = `const m = await import(${JSON.stringify(pathToFileURL(entry).href)});
const store = await m.openStore({ url: ${JSON.stringify(store)}, cacheDir: false, env: {} });
console.log(JSON.stringify({ problems: store.problems.length, ref: m.parseArtifactRef('engine/echo') }));`;
  const { urls, stdout } = modulesLoadedBy(dir, script);
  return { urls, listed: JSON.parse(stdout) };
}

const HEAVY = /\/(jose|tar-stream)\/|pack-signature/;
/** Text only the tar reader, the extractor and gunzip hold. */
const MARKERS = ['TarReader = class', 'function extractInto(', 'function* inflateGzip('];

function ownText(urls: string[]): string {
  return urls
    .filter((url) => url.startsWith(pathToFileURL(dist).href))
    .map((url) => readFileSync(fileURLToPath(url), 'utf8'))
    .join('\n');
}

describe('@packwarden/store-client/store', () => {
  it('is exported as a subpath of the package', () => {
    const manifest = JSON.parse(
      readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
    ) as { exports: Record<string, { default: string }> };
    expect(manifest.exports['./store']?.default).toBe('./dist/store-entry.js');
  });

  it('browses a store without loading jose, the verifier, the tar code or the extractor', async () => {
    const { urls, listed } = await loadInChild(join(dist, 'store-entry.js'));
    expect(listed).toEqual({ problems: 1, ref: { type: 'engine', slug: 'echo' } });
    expect(urls.filter((url) => HEAVY.test(url))).toEqual([]);
    // The package's own chunks that loaded hold none of the install code.
    const own = urls.filter((url) => url.startsWith(pathToFileURL(dist).href));
    expect(own.length).toBeGreaterThan(0);
    for (const url of own) {
      const text = readFileSync(fileURLToPath(url), 'utf8');
      for (const marker of MARKERS) expect(text, `${url} holds ${marker}`).not.toContain(marker);
    }
  });

  it('(control) the full entry does load the tar code, so the check sees what it should', async () => {
    const { urls } = await loadInChild(join(dist, 'index.js'));
    const text = ownText(urls);
    for (const marker of MARKERS) expect(text).toContain(marker);
  });

  it('the full entry loads neither jose nor the verifier: a signature check or a push imports them', async () => {
    // oci/push-pack.ts imported pack-signature at load, which put jose and the verifier into
    // every import of the package (issue 14).
    const { urls } = await loadInChild(join(dist, 'index.js'));
    expect(urls.filter((url) => /\/jose\/|pack-signature/.test(url))).toEqual([]);
  });
});
