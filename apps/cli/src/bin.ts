#!/usr/bin/env node
import { fstatSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Script } from 'node:vm';
import { crc32 } from 'node:zlib';
import type * as Cli from './index.js';
import { PipeOutput } from './pipe-output.js';

// Set by tsup.config.ts, which makes dist/cli.cjs and its code cache with the same values.
declare const __PACKWARDEN_BUNDLE_HEAD__: string;
declare const __PACKWARDEN_BUNDLE_TAIL__: string;
declare const __PACKWARDEN_CACHE_MAGIC__: string;

type ProcessStreamName = 'stdout' | 'stderr';

/**
 * A reader that closed early (`packwarden … | head`) is not an error worth a stack trace. Each of
 * `process.stdout` and `process.stderr` gets that handler when it is first read, by whoever reads
 * it: making both here just to add it would build a net.Socket on a pipe (see PipeOutput).
 * `madeStreams` holds the ones made so far.
 */
const madeStreams: Partial<Record<ProcessStreamName, NodeJS.WriteStream>> = {};
for (const name of ['stdout', 'stderr'] as const) {
  const make = Object.getOwnPropertyDescriptor(process, name)?.get;
  const withHandler = (stream: NodeJS.WriteStream) => {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw error;
    });
    return (madeStreams[name] = stream);
  };
  if (make === undefined) withHandler(process[name]);
  else
    Object.defineProperty(process, name, {
      configurable: true,
      enumerable: true,
      get: () => madeStreams[name] ?? withHandler(make.call(process) as NodeJS.WriteStream),
    });
}

/**
 * Where a command writes: Node's stream, except on a pipe or a socket (`| head`, a CI log, a
 * parent process), where a {@link PipeOutput} writes the descriptor itself. `sandbox` commands
 * own the process's streams: the sandbox sends what is written to `process.stdout` to stderr,
 * and `packwarden sandbox` refuses any other stdout (commands/sandbox/serve.ts).
 */
function processOutput(name: ProcessStreamName, fd: number, argv: readonly string[]) {
  let pipe = false;
  try {
    const stat = fstatSync(fd);
    pipe = argv[0] !== 'sandbox' && (stat.isFIFO() || stat.isSocket());
  } catch {
    // No such descriptor, or not one fstat can describe: Node's stream decides what to do.
  }
  if (!pipe) return process[name];
  return new PipeOutput(fd, { current: () => madeStreams[name], create: () => process[name] });
}

// One CLI process validates a handful of documents: zod's code-generating fast path costs more
// to build than it saves here (about 5 ms of a cold `pack verify`). zod 4 adopts the config object
// it finds on globalThis when it loads, so commands that never validate (`--help`, `pack list`,
// `env`) do not load zod just to configure it (bench/README.md, "CLI start-up"); the drift test
// in test/startup.test.ts fails if a zod update stops reading it.
const zodGlobal = globalThis as { __zod_globalConfig?: Record<string, unknown> };
zodGlobal.__zod_globalConfig = { ...zodGlobal.__zod_globalConfig, jitless: true };

/**
 * The program is one CommonJS bundle, `dist/cli.cjs`, compiled here with the V8 code cache the
 * build made from it (`dist/cli.cjs.cache`): V8 then skips parsing and compiling what the cache
 * holds, which was most of a cold `pack verify` (bench/README.md, "CLI start-up"). Node 20 has no
 * compile cache for ES modules, hence CommonJS and `vm.Script`.
 *
 * The cache is only ever read: it ships in the package next to the code, as trusted as the code,
 * and is never written at run time. It is used only when its header names this bundle's build
 * id; V8 itself refuses one made by another V8 version or under other flags
 * (`script.cachedDataRejected`). Without a usable cache the bundle compiles as usual: slower,
 * same behaviour.
 */
function loadProgram(): typeof Cli {
  const dirname = import.meta.dirname;
  const filename = `${dirname}/cli.cjs`;
  // esbuild writes ASCII only (non-ASCII characters are escaped), so latin1 decodes it exactly
  // and more cheaply than UTF-8.
  const source = readFileSync(filename, 'latin1');
  const script = new Script(__PACKWARDEN_BUNDLE_HEAD__ + source + __PACKWARDEN_BUNDLE_TAIL__, {
    filename,
    cachedData: readCodeCache(`${dirname}/cli.cjs.cache`, source),
  });
  // The bundle requires Node built-ins only (everything else is bundled): they come straight
  // from process.getBuiltinModule, without the CommonJS resolver createRequire sets up.
  let resolver: NodeJS.Require | undefined;
  const bundleRequire = (id: string): unknown =>
    process.getBuiltinModule(id) ?? (resolver ??= createRequire(filename))(id);
  const module = { exports: {} as typeof Cli };
  (script.runInThisContext() as (...args: unknown[]) => void)(
    module.exports,
    bundleRequire,
    module,
    filename,
    dirname,
    new URL('./cli.cjs', import.meta.url).href,
    (specifier: string) => import.meta.resolve(specifier),
    (specifier: string) => import(specifier),
  );
  return module.exports;
}

/**
 * The V8 data of `cache` when its header names the build id at the end of `source` and the data
 * has the CRC-32 the header states. V8 checks only that the data fits its version, flags and the
 * source's length: it runs damaged data (a torn copy, a flipped bit) and crashes, so a cache that
 * was not written whole by the build is never handed to it.
 */
function readCodeCache(cache: string, source: string): Buffer | undefined {
  const buildId = /packwardenBuild=([0-9a-f]{64})\n$/.exec(source.slice(-100))?.[1];
  if (buildId === undefined) return undefined;
  let file: Buffer;
  try {
    file = readFileSync(cache);
  } catch {
    return undefined;
  }
  const newline = file.indexOf(10);
  const header = /^(\S+) ([0-9a-f]{64}) ([0-9a-f]{8})$/.exec(
    file.toString('latin1', 0, newline === -1 || newline > 200 ? 0 : newline),
  );
  if (header?.[1] !== __PACKWARDEN_CACHE_MAGIC__ || header[2] !== buildId) return undefined;
  const data = file.subarray(newline + 1);
  return crc32(data) === Number.parseInt(header[3]!, 16) ? data : undefined;
}

const { run } = loadProgram();
const argv = process.argv.slice(2);
// What processIo() returns, with pipe and socket outputs written as above.
process.exitCode = await run(argv, {
  stdout: processOutput('stdout', 1, argv),
  stderr: processOutput('stderr', 2, argv),
  env: process.env,
  cwd: process.cwd(),
});
