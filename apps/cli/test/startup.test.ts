import { spawnSync } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanTemps, copyOfExample, examplePack, tempDir } from './helpers.js';

const bin = new URL('../dist/bin.js', import.meta.url).pathname;
afterEach(cleanTemps);

/**
 * Runs the built binary under V8 coverage and returns which bundled modules ran. The program is
 * one CommonJS bundle (dist/cli.cjs) in which esbuild wraps every module reached through
 * `import()` or `require()` in a function named after its source path
 * (`../../node_modules/.pnpm/jose@6.2.18/…`, `../../packages/pack-signature/src/…`), called the
 * first time the module is imported: a wrapper that ran is a module that was loaded.
 */
function loadedSources(args: string[], env: Record<string, string> = {}) {
  const coverage = tempDir();
  const result = spawnSync(process.execPath, [bin, ...args], {
    encoding: 'utf8',
    env: { ...process.env, PACKWARDEN_HOME: tempDir(), NODE_V8_COVERAGE: coverage, ...env },
  });
  const wrapped = new Set<string>();
  const sources = new Set<string>();
  for (const file of readdirSync(coverage)) {
    const report = JSON.parse(readFileSync(join(coverage, file), 'utf8')) as {
      result: Array<{
        url: string;
        functions: Array<{ functionName: string; ranges: Array<{ count: number }> }>;
      }>;
    };
    for (const script of report.result) {
      if (!script.url.endsWith('/dist/cli.cjs')) continue;
      for (const fn of script.functions) {
        const match = /^\.\.\/\.\.\/(\S+)$/.exec(fn.functionName);
        if (!match) continue;
        const source = match[1]!.replace(/^node_modules\/\.pnpm\/[^/]+\/node_modules\//, '');
        wrapped.add(source);
        if (fn.ranges[0]!.count > 0) sources.add(source);
      }
    }
  }
  return {
    status: result.status,
    stderr: result.stderr,
    wrapped: [...wrapped],
    sources: [...sources],
  };
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
    expect(loaded.sources.length).toBeGreaterThan(3);
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
    // Each heavy module is one the probe can see (wrapped, not hoisted into the bundle's top).
    for (const heavy of HEAVY) expect(loaded.wrapped.some((s) => heavy.test(s))).toBe(true);
    expect(heavyIn(loaded.sources)).toEqual([]);
  });

  test('store list --help, and store list on a local static store (issue 14 item 3)', () => {
    const packs = tempDir();
    cpSync(examplePack, join(packs, 'hello-pack'), { recursive: true });
    const store = join(tempDir(), 'store');
    const built = spawnSync(process.execPath, [bin, 'store', 'build', packs, '--out', store], {
      encoding: 'utf8',
    });
    expect(built.status, built.stderr).toBe(0);
    for (const args of [
      ['store', 'list', '--help'],
      ['store', 'list', '--store', store],
    ]) {
      const loaded = loadedSources(args);
      expect(loaded.status, loaded.stderr).toBe(0);
      expect(loaded.sources.length).toBeGreaterThan(0);
      expect(heavyIn(loaded.sources)).toEqual([]);
    }
  });

  test('--help, -V, pack list and env do not load zod either', () => {
    for (const args of [['--help'], ['-V'], ['pack', 'list'], ['env']]) {
      const loaded = loadedSources(args);
      expect(loaded.status, loaded.stderr).toBe(0);
      expect(loaded.wrapped.some((s) => s.startsWith('zod/'))).toBe(true);
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

describe('code cache: dist/cli.cjs.cache, made at build time, only ever read', () => {
  // Reports, for every vm.Script the process makes, whether it was handed cached data and
  // whether V8 refused it.
  function scriptProbe(): string {
    const probe = join(tempDir(), 'probe.cjs');
    writeFileSync(
      probe,
      `const vm = require('node:vm');
const { syncBuiltinESMExports } = require('node:module');
const Script = vm.Script;
vm.Script = class extends Script {
  constructor(source, options) {
    super(source, options);
    process.stderr.write('[script] ' + JSON.stringify({ cachedData: options?.cachedData !== undefined, rejected: this.cachedDataRejected === true }) + '\\n');
  }
};
syncBuiltinESMExports();\n`,
    );
    return probe;
  }
  const scripts = (stderr: string) =>
    [...stderr.matchAll(/^\[script\] (.*)$/gm)].map((m) => JSON.parse(m[1]!) as unknown);

  /** dist/ and package.json copied to a temp package, with `cache` as its code cache. */
  function distWithCache(cache: (real: Buffer) => Buffer | undefined): string {
    const root = tempDir();
    cpSync(new URL('../dist', import.meta.url), join(root, 'dist'), { recursive: true });
    cpSync(new URL('../package.json', import.meta.url), join(root, 'package.json'));
    const path = join(root, 'dist', 'cli.cjs.cache');
    const replaced = cache(readFileSync(path));
    if (replaced === undefined) rmSync(path);
    else writeFileSync(path, replaced);
    return join(root, 'dist', 'bin.js');
  }

  test('the shipped binary compiles its bundle with the cache, and V8 accepts it', () => {
    const result = spawnSync(process.execPath, ['-r', scriptProbe(), bin, '--help'], {
      encoding: 'utf8',
    });
    expect(result.status, result.stderr).toBe(0);
    expect(scripts(result.stderr)).toEqual([{ cachedData: true, rejected: false }]);
  });

  const header = (real: Buffer) => real.subarray(0, real.indexOf(10) + 1).toString('latin1');
  test.each([
    ['missing', [], () => undefined, { cachedData: false, rejected: false }],
    [
      'made for another build',
      [],
      (real: Buffer) =>
        Buffer.concat([
          Buffer.from(header(real).replace(/ [0-9a-f]{64} /, ` ${'0'.repeat(64)} `)),
          real.subarray(real.indexOf(10) + 1),
        ]),
      { cachedData: false, rejected: false },
    ],
    [
      // V8 would run it and crash (SIGSEGV): the CRC-32 in the header keeps it from V8.
      'damaged (its V8 data overwritten, header intact)',
      [],
      (real: Buffer) => Buffer.from(real).fill(0x5a, header(real).length + 64),
      { cachedData: false, rejected: false },
    ],
    [
      'whole, but made under other V8 flags (V8 refuses it)',
      ['--no-flush-bytecode'],
      (real: Buffer) => real,
      { cachedData: true, rejected: true },
    ],
  ])('a cache %s is not used, and the output is the same', (_name, flags, cache, seen) => {
    const pack = copyOfExample();
    const args = ['pack', 'info', pack, '--json'];
    const expected = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8' });
    const result = spawnSync(
      process.execPath,
      [...flags, '-r', scriptProbe(), distWithCache(cache), ...args],
      { encoding: 'utf8' },
    );
    expect(scripts(result.stderr)).toEqual([seen]);
    expect(result.status).toBe(expected.status);
    expect(result.stdout).toBe(expected.stdout);
    expect(expected.status).toBe(0);
  });

  test('the tarball carries the bundle and its cache (npm pack)', () => {
    const pack = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: new URL('..', import.meta.url).pathname,
      encoding: 'utf8',
    });
    expect(pack.status, pack.stderr).toBe(0);
    const files = (
      JSON.parse(pack.stdout) as Array<{ files: Array<{ path: string }> }>
    )[0]!.files.map((file) => file.path);
    expect(files).toEqual(
      expect.arrayContaining(['dist/bin.js', 'dist/cli.cjs', 'dist/cli.cjs.cache']),
    );
  }, 60_000);
});
