import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanTemps, copyOfExample, examplePack, tempDir } from './helpers.js';

const bin = new URL('../dist/bin.js', import.meta.url).pathname;
afterEach(cleanTemps);

/**
 * Runs the built binary with a module loader hook that records every file it loads, and returns
 * the sources bundled in those files: esbuild heads each bundled module with a `// <path>`
 * comment (`../../node_modules/.pnpm/jose@6.2.18/…`, `../../packages/pack-signature/src/…`).
 */
function loadedSources(args: string[], env: Record<string, string> = {}) {
  const dir = tempDir();
  const record = join(dir, 'loaded.txt');
  writeFileSync(record, '');
  const hooks = join(dir, 'hooks.mjs');
  writeFileSync(
    hooks,
    `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  if (url.startsWith('file:')) appendFileSync(${JSON.stringify(record)}, url + '\\n');
  return next(url, context);
}\n`,
  );
  const register = join(dir, 'register.mjs');
  writeFileSync(
    register,
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
  );
  const result = spawnSync(process.execPath, ['--import', register, bin, ...args], {
    encoding: 'utf8',
    env: { ...process.env, PACKWARDEN_HOME: tempDir(), ...env },
  });
  const files = readFileSync(record, 'utf8').split('\n').filter(Boolean);
  const sources = new Set<string>();
  for (const url of files) {
    for (const match of readFileSync(new URL(url), 'utf8').matchAll(/^\/\/ \.\.\/\.\.\/(\S+)$/gm)) {
      sources.add(match[1]!.replace(/^node_modules\/\.pnpm\/[^/]+\/node_modules\//, ''));
    }
  }
  return { status: result.status, stderr: result.stderr, files, sources: [...sources] };
}

// What only verification, signing and installing need (issue 14 item 3).
const HEAVY = [
  /^jose\//,
  /^tar-stream\//,
  /^packages\/pack-signature\/src\/(verify|es256)\.ts$/,
  /^packages\/store-client\/src\/(tar-reader|extract)\.ts$/,
];
const heavyIn = (sources: string[]) => sources.filter((s) => HEAVY.some((re) => re.test(s)));

describe('start-up: cheap commands do not load the verifier, jose or the tar code', () => {
  test('the probe sees them when a command needs them (pack verify)', () => {
    const pack = copyOfExample();
    const loaded = loadedSources(['pack', 'verify', pack, '--keys', '/nonexistent/keys.json']);
    expect(loaded.files.length).toBeGreaterThan(3);
    const heavy = heavyIn(loaded.sources);
    expect(heavy.some((s) => s.startsWith('jose/'))).toBe(true);
    expect(heavy).toContain('packages/pack-signature/src/verify.ts');
  });

  test.each([
    ['--help', ['--help']],
    ['-V', ['-V']],
    ['pack --help', ['pack', '--help']],
    ['pack info', ['pack', 'info', examplePack]],
    ['pack info --json', ['pack', 'info', examplePack, '--json']],
    ['pack list', ['pack', 'list']],
    ['pack validate', ['pack', 'validate', examplePack]],
    ['env', ['env']],
  ])('%s', (_name, args) => {
    const loaded = loadedSources(args);
    expect(loaded.status, loaded.stderr).toBe(0);
    expect(loaded.sources.length).toBeGreaterThan(0);
    expect(heavyIn(loaded.sources)).toEqual([]);
  });

  test('--help, -V, pack list and env do not load zod either', () => {
    for (const args of [['--help'], ['-V'], ['pack', 'list'], ['env']]) {
      const loaded = loadedSources(args);
      expect(loaded.status, loaded.stderr).toBe(0);
      expect(loaded.sources.filter((s) => s.startsWith('zod/'))).toEqual([]);
    }
  });
});

describe('zod is configured before it loads', () => {
  test('zod adopts the jitless config bin.ts puts on globalThis (drift test for a zod update)', async () => {
    const probe = join(tempDir(), 'probe.mjs');
    writeFileSync(
      probe,
      `globalThis.__zod_globalConfig = { jitless: true };
const { config } = await import(${JSON.stringify(import.meta.resolve('zod'))});
process.stdout.write(JSON.stringify(config()));\n`,
    );
    const result = spawnSync(process.execPath, [probe], { encoding: 'utf8' });
    expect(result.status, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ jitless: true });
  });
});
