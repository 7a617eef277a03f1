import { spawnSync } from 'node:child_process';
import {
  closeSync,
  constants,
  cpSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { PipeOutput } from '../src/pipe-output.js';
import { cleanTemps, cli, copyOfExample, examplePack, repoRoot, tempDir } from './helpers.js';

const bin = new URL('../dist/bin.cjs', import.meta.url).pathname;
afterEach(cleanTemps);

/**
 * Runs the built binary under V8 coverage and returns which bundled modules ran. The program is
 * one CommonJS bundle (dist/cli.cjs) in which esbuild wraps every module reached through
 * `import()` or `require()` in a function named after its source path
 * (`../../node_modules/.pnpm/jose@6.2.18/…`, `../../packages/pack-signature/src/…`), called the
 * first time the module is imported: a wrapper that ran is a module that was loaded.
 */
function loadedSources(args: string[], env: Record<string, string> = {}, input?: string) {
  const coverage = tempDir();
  const result = spawnSync(process.execPath, [bin, ...args], {
    encoding: 'utf8',
    ...(input === undefined ? {} : { input }),
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
    stdout: result.stdout,
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

  test('a sandbox boot of a custom-engine pack runs neither the claude nor the codex engine (issue 14 target 4)', () => {
    const pack = copyOfExample();
    const stateDir = tempDir();
    const loaded = loadedSources(
      ['sandbox', '--stdio', '--agent', pack, '--state-dir', stateDir, '--isolation', 'off'],
      {},
      `${JSON.stringify({ type: 'hello', protocols: [1] })}\n${JSON.stringify({ type: 'shutdown' })}\n`,
    );
    expect(loaded.status, loaded.stderr).toBe(0);
    expect(loaded.stdout).toContain('"type":"welcome"');
    const engines = /^packages\/engines\/src\/(claude|codex|custom)-engine\.ts$/;
    // All three are wrappers the probe can see; only the pack's own kind of engine ran.
    expect(loaded.wrapped.filter((s) => engines.test(s)).sort()).toEqual([
      'packages/engines/src/claude-engine.ts',
      'packages/engines/src/codex-engine.ts',
      'packages/engines/src/custom-engine.ts',
    ]);
    expect(loaded.sources.filter((s) => engines.test(s))).toEqual([
      'packages/engines/src/custom-engine.ts',
    ]);
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
    process.stderr.write('[script] ' + JSON.stringify({ cachedData: options?.cachedData !== undefined, rejected: this.cachedDataRejected === true, bytes: options?.cachedData?.length ?? 0 }) + '\\n');
  }
};
syncBuiltinESMExports();\n`,
    );
    return probe;
  }
  const scripts = (stderr: string) =>
    [...stderr.matchAll(/^\[script\] (.*)$/gm)].map((m) => JSON.parse(m[1]!) as unknown);

  /**
   * dist/ and package.json copied to a temp package, with `cache` as its code cache `file`
   * (removed when `cache` returns undefined, or when `remove` says so).
   */
  function distWithCache(
    cache: (real: Buffer) => Buffer | undefined,
    file = 'cli.cjs.cache',
    remove = false,
  ): string {
    const root = tempDir();
    cpSync(new URL('../dist', import.meta.url), join(root, 'dist'), { recursive: true });
    cpSync(new URL('../package.json', import.meta.url), join(root, 'package.json'));
    const path = join(root, 'dist', file);
    const replaced = remove ? undefined : cache(readFileSync(path));
    if (replaced === undefined) rmSync(path);
    else writeFileSync(path, replaced);
    return join(root, 'dist', 'bin.cjs');
  }

  /** Bytes of V8 data in a cache file of dist/ (what follows its one-line header). */
  const cacheBytes = (file: string) => {
    const data = readFileSync(new URL(`../dist/${file}`, import.meta.url));
    return data.length - data.indexOf(10) - 1;
  };
  const FRAMES = '{"type":"hello","protocols":[1]}\n{"type":"shutdown"}\n';

  test('the shipped binary compiles its bundle with the cache, and V8 accepts it', () => {
    const result = spawnSync(process.execPath, ['-r', scriptProbe(), bin, '--help'], {
      encoding: 'utf8',
    });
    expect(result.status, result.stderr).toBe(0);
    expect(scripts(result.stderr)).toEqual([
      { cachedData: true, rejected: false, bytes: cacheBytes('cli.cjs.cache') },
    ]);
  });

  test('packwarden sandbox compiles it with a cache of its own, made from a boot', () => {
    // One cache holding both cost pack verify more to load than it saved; without one the
    // sandbox's code was compiled lazily at every boot (bench/README.md, issue 14).
    const sandboxBytes = cacheBytes('cli.cjs.sandbox.cache');
    expect(sandboxBytes).not.toBe(cacheBytes('cli.cjs.cache'));
    const args = ['sandbox', '--stdio', '--agent', copyOfExample(), '--isolation', 'off'];
    const result = spawnSync(
      process.execPath,
      ['-r', scriptProbe(), bin, ...args, '--state-dir', tempDir()],
      { encoding: 'utf8', input: FRAMES },
    );
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('"type":"welcome"');
    expect(scripts(result.stderr)).toEqual([
      { cachedData: true, rejected: false, bytes: sandboxBytes },
    ]);
    // Without it (a package that lost the file), the boot is the same, compiled lazily.
    const bare = distWithCache((real) => real, 'cli.cjs.sandbox.cache', true);
    const lazy = spawnSync(
      process.execPath,
      ['-r', scriptProbe(), bare, ...args, '--state-dir', tempDir()],
      { encoding: 'utf8', input: FRAMES },
    );
    expect(lazy.status, lazy.stderr).toBe(0);
    expect(lazy.stdout).toBe(result.stdout);
    expect(scripts(lazy.stderr)).toEqual([{ cachedData: false, rejected: false, bytes: 0 }]);
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
    expect(scripts(result.stderr)).toMatchObject([seen]);
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
      expect.arrayContaining([
        'dist/bin.cjs',
        'dist/cli.cjs',
        'dist/cli.cjs.cache',
        'dist/cli.cjs.sandbox.cache',
      ]),
    );
  }, 60_000);
});

describe("output on a pipe or a socket: written to the descriptor, Node's stream only if refused", () => {
  /** A named pipe, both ends open and non-blocking. */
  function namedPipe() {
    const path = join(tempDir(), 'fifo');
    const made = spawnSync('mkfifo', [path]);
    expect(made.status, made.stderr?.toString()).toBe(0);
    const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
    const fds = [reader, writer];
    const drain = () => {
      const chunks: Buffer[] = [];
      const buffer = Buffer.alloc(65536);
      for (;;) {
        let read: number;
        try {
          read = readSync(reader, buffer);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break;
          throw error;
        }
        if (read === 0) break;
        chunks.push(Buffer.from(buffer.subarray(0, read)));
      }
      return Buffer.concat(chunks).toString('utf8');
    };
    /** Writes until the pipe refuses, then reads `room` bytes back: `room` bytes are free. */
    const fill = (room = 0) => {
      try {
        for (;;) writeSync(writer, Buffer.alloc(4096, 0x2e));
      } catch (error) {
        expect((error as NodeJS.ErrnoException).code).toBe('EAGAIN');
      }
      if (room > 0) expect(readSync(reader, Buffer.alloc(room))).toBe(room);
    };
    return { reader, writer, drain, fill, close: () => fds.splice(0).forEach(closeSync) };
  }

  /** Node's stream as a PipeOutput sees it: what it was given, and whether it was made. */
  function nodeStream(existing = false) {
    const seen = { made: existing, text: '' };
    const stream = { write: (chunk: Uint8Array | string) => (seen.text += chunk.toString()) };
    return {
      seen,
      access: {
        current: () => (seen.made ? stream : undefined),
        create: () => ((seen.made = true), stream),
      },
    };
  }

  test("writes go to the descriptor while it takes them; Node's stream is never made", () => {
    const pipe = namedPipe();
    try {
      const node = nodeStream();
      const output = new PipeOutput(pipe.writer, node.access);
      output.write('verified  hello-pack@0.1.0  ');
      output.write('signed by é\n');
      expect(pipe.drain()).toBe('verified  hello-pack@0.1.0  signed by é\n');
      expect(node.seen).toEqual({ made: false, text: '' });
    } finally {
      pipe.close();
    }
  });

  test("a full non-blocking pipe: what it refused, and every later write, go to Node's stream in order", () => {
    const pipe = namedPipe();
    try {
      // One free page: a write larger than a page goes in part (Linux writes what fits).
      pipe.fill(4096);
      const node = nodeStream();
      const output = new PipeOutput(pipe.writer, node.access);
      const text = Array.from({ length: 600 }, (_, i) => `line ${i}`).join('\n');
      output.write(text);
      const direct = pipe.drain().replace(/^\.+/, '');
      expect(direct.length).toBeGreaterThan(0);
      expect(node.seen.made).toBe(true);
      expect(node.seen.text.length).toBeGreaterThan(0);
      expect(direct + node.seen.text).toBe(text);
      // The pipe has room again: the stream keeps the writes all the same, so none overtakes it.
      output.write('abc');
      expect(node.seen.text.endsWith('abc')).toBe(true);
      expect(pipe.drain()).toBe('');
    } finally {
      pipe.close();
    }
  });

  test("a reader that closed (EPIPE): the bytes go to Node's stream, whose error bin.ts handles", () => {
    const pipe = namedPipe();
    try {
      closeSync(pipe.reader);
      const node = nodeStream();
      new PipeOutput(pipe.writer, node.access).write('{"schemaVersion":1}\n');
      expect(node.seen).toEqual({ made: true, text: '{"schemaVersion":1}\n' });
    } finally {
      closeSync(pipe.writer);
    }
  });

  test("once something made Node's stream, every write goes through it", () => {
    const pipe = namedPipe();
    try {
      const node = nodeStream(true);
      new PipeOutput(pipe.writer, node.access).write('x\n');
      expect(node.seen.text).toBe('x\n');
      expect(pipe.drain()).toBe('');
    } finally {
      pipe.close();
    }
  });

  /** Runs the binary with a probe that lists, in `file`, the Node modules loaded by exit. */
  function probeModules(pattern = /^NativeModule (net|child_process|dgram|tty)$/) {
    const dir = tempDir();
    const file = join(dir, 'modules.json');
    const probe = join(dir, 'probe.cjs');
    writeFileSync(
      probe,
      `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(file)}, JSON.stringify(process.moduleLoadList)));\n`,
    );
    return {
      probe,
      loaded: () =>
        (JSON.parse(readFileSync(file, 'utf8')) as string[]).filter((m) => pattern.test(m)),
    };
  }

  test('pack info --json on a socket and on a pipe: the same bytes as in-process, without node:net', async () => {
    const args = ['pack', 'info', examplePack, '--json'];
    const expected = await cli(args, { env: { ...process.env } });
    expect(expected.code).toBe(0);
    // A socket, as a parent Node process makes with spawn().
    const socketProbe = probeModules();
    const onSocket = spawnSync(process.execPath, ['-r', socketProbe.probe, bin, ...args], {
      encoding: 'utf8',
    });
    expect(onSocket.status, onSocket.stderr).toBe(0);
    expect(onSocket.stdout).toBe(expected.stdout);
    expect(socketProbe.loaded()).toEqual([]);
    // A pipe, as a shell makes for `packwarden … | cat`.
    const pipeProbe = probeModules();
    const onPipe = spawnSync(
      'sh',
      ['-c', '"$0" "$@" | cat', process.execPath, '-r', pipeProbe.probe, bin, ...args],
      { encoding: 'utf8' },
    );
    expect(onPipe.status, onPipe.stderr).toBe(0);
    expect(onPipe.stdout).toBe(expected.stdout);
    expect(pipeProbe.loaded()).toEqual([]);
  });

  test('pack verify, pack info and --help never load node:fs/promises; a command that uses it does', () => {
    // bin.ts hands the bundle node:fs/promises as an object that loads it on first use: dozens
    // of modules import it, and loading it loads readline, the file watchers and fs.Dir.
    const dir = copyOfExample();
    const keys = tempDir();
    const keyPem = join(keys, 'key.pem');
    const run = (args: string[]) => {
      const probe = probeModules(/^NativeModule (fs\/promises|internal\/readline\/interface)$/);
      const result = spawnSync(process.execPath, ['-r', probe.probe, bin, ...args], {
        encoding: 'utf8',
        env: { ...process.env, PACKWARDEN_HOME: tempDir() },
      });
      expect(result.status, result.stderr).toBe(0);
      return probe.loaded();
    };
    run(['pack', 'keygen', '--kid', 'k', '-o', keyPem]);
    run(['pack', 'sign', dir, '--key', keyPem, '--kid', 'k']);
    expect(run(['pack', 'verify', dir, '--keys', join(keys, 'key.keys.json')])).toEqual([]);
    expect(run(['pack', 'info', dir])).toEqual([]);
    expect(run(['--help'])).toEqual([]);
    // pack schema -o writes with fs/promises' writeFile: loaded when called, and it works.
    const schema = join(tempDir(), 'schema.json');
    expect(run(['pack', 'schema', '-o', schema])).toEqual([
      'NativeModule internal/readline/interface',
      'NativeModule fs/promises',
    ]);
    expect(JSON.parse(readFileSync(schema, 'utf8'))).toHaveProperty('$schema');
  });

  test('a sandbox boot never loads node:http (only `sandbox doctor` serves HTTP)', () => {
    const probe = probeModules(/^NativeModule (http|_http_server)$/);
    const args = ['sandbox', '--stdio', '--agent', copyOfExample(), '--isolation', 'off'];
    const result = spawnSync(
      process.execPath,
      ['-r', probe.probe, bin, ...args, '--state-dir', tempDir()],
      { encoding: 'utf8', input: '{"type":"hello","protocols":[1]}\n{"type":"shutdown"}\n' },
    );
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('"type":"welcome"');
    expect(probe.loaded()).toEqual([]);
  });

  test("sandbox commands keep Node's streams (the probe sees node:net load for them)", () => {
    const probe = probeModules();
    const result = spawnSync(process.execPath, ['-r', probe.probe, bin, 'sandbox', '--help'], {
      encoding: 'utf8',
    });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('Usage: packwarden sandbox');
    expect(probe.loaded()).toContain('NativeModule net');
  });

  /** Runs the binary with stdout, stderr or both on a pipe whose reader has already closed. */
  function toClosedReader(args: string[], which: 'stdout' | 'stderr' | 'both') {
    const pipe = namedPipe();
    closeSync(pipe.reader);
    try {
      const stdout = which === 'stderr' ? 'pipe' : pipe.writer;
      const stderr = which === 'stdout' ? 'pipe' : pipe.writer;
      return spawnSync(process.execPath, [bin, ...args], {
        cwd: repoRoot,
        stdio: ['ignore', stdout, stderr],
        encoding: 'utf8',
      });
    } finally {
      closeSync(pipe.writer);
    }
  }

  // Exit codes as before this change (measured on the build that used Node's streams): a reader
  // that closed early is not an error of the command's, whose own exit code stands.
  test.each([
    ['pack info --json, stdout closed', ['pack', 'info', examplePack, '--json'], 'stdout', 0],
    [
      'pack validate of an invalid pack, stdout closed',
      ['pack', 'validate', 'bad', '--json'],
      'stdout',
      1,
    ],
    ['pack validate of an invalid pack, stderr closed', ['pack', 'validate', 'bad'], 'stderr', 1],
    ['an unknown command, both closed', ['pack', 'nosuch'], 'both', 2],
  ] as const)(
    'a reader that closed early: %s → no stack trace, exit %i',
    (_name, args, which, code) => {
      const bad = join(tempDir(), 'bad');
      cpSync(examplePack, bad, { recursive: true });
      writeFileSync(
        join(bad, 'agent.yaml'),
        'apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: BAD_NAME, version: 1.0.0}\n',
      );
      const result = toClosedReader(
        args.map((arg) => (arg === 'bad' ? bad : arg)),
        which,
      );
      expect(result.status).toBe(code);
      expect(result.stderr ?? '').toBe('');
      expect(result.stdout ?? '').toBe('');
    },
  );
});
