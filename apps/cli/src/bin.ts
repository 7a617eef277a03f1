#!/usr/bin/env node
import type * as FsPromises from 'node:fs/promises';
import type * as Cli from './index.js';
import { PipeOutput } from './pipe-output.js';

// This file is built as CommonJS (`dist/bin.cjs`): an ES module entry point costs Node's ESM
// loader, ~3 ms of every start-up, and an ES module import of a built-in builds its namespace,
// which for node:fs loads fs.promises, streams and readline (issue 14, bench/README.md "CLI
// start-up"). Built-ins come from process.getBuiltinModule; `__dirname` is CommonJS's.
const { fstatSync, readFileSync } = process.getBuiltinModule('node:fs');
const { createRequire } = process.getBuiltinModule('node:module');
const { pathToFileURL } = process.getBuiltinModule('node:url');
const { Script } = process.getBuiltinModule('node:vm');
const { crc32 } = process.getBuiltinModule('node:zlib');

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
/** The command's exit code, once it answered. */
let answer: number | undefined;
/** A reader closed before the command answered: exit as soon as it does. */
let readerClosed = false;
for (const name of ['stdout', 'stderr'] as const) {
  const make = Object.getOwnPropertyDescriptor(process, name)?.get;
  const withHandler = (stream: NodeJS.WriteStream) => {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      // Nothing more can be shown: exit with the command's code, when it has one.
      if (answer !== undefined) process.exit(answer);
      readerClosed = true;
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
function loadProgram(sandbox: boolean): typeof Cli {
  const dirname = __dirname;
  const filename = `${dirname}/cli.cjs`;
  // esbuild writes ASCII only (non-ASCII characters are escaped), so latin1 decodes it exactly
  // and more cheaply than UTF-8.
  const source = readFileSync(filename, 'latin1');
  const script = new Script(__PACKWARDEN_BUNDLE_HEAD__ + source + __PACKWARDEN_BUNDLE_TAIL__, {
    filename,
    // `packwarden sandbox` has a cache of its own (tsup.config.ts): one holding both cost every
    // other command more to load than it saved them.
    cachedData: readCodeCache(
      `${dirname}/${sandbox ? 'cli.cjs.sandbox.cache' : 'cli.cjs.cache'}`,
      source,
    ),
  });
  // The bundle requires Node built-ins only (everything else is bundled): they come straight
  // from process.getBuiltinModule, without the CommonJS resolver createRequire sets up.
  let resolver: NodeJS.Require | undefined;
  const bundleRequire = (id: string): unknown =>
    id === 'node:fs/promises'
      ? lazyFsPromises
      : (process.getBuiltinModule(id) ?? (resolver ??= createRequire(filename))(id));
  const module = { exports: {} as typeof Cli };
  (script.runInThisContext() as (...args: unknown[]) => void)(
    module.exports,
    bundleRequire,
    module,
    filename,
    dirname,
    pathToFileURL(filename).href,
    // import.meta.resolve of a module in this folder (an ES module, required when first used).
    (specifier: string) =>
      (
        (resolver ??= createRequire(filename))('./esm-resolve.js') as {
          resolve(specifier: string): string;
        }
      ).resolve(specifier),
    (specifier: string) => import(specifier),
  );
  return module.exports;
}

/**
 * `node:fs/promises` as the bundle sees it: loaded when a command first calls one of its
 * functions. Dozens of the bundle's modules import it when they load, and loading it loads
 * readline, the file watchers and `fs.Dir` (~5 M instructions, issue 14), which `pack verify`
 * and `--help` never use. The bundle only reads its functions (`(0, x.readFile)(…)`), each
 * of which is the module's own.
 */
const lazyFsPromises: typeof FsPromises = new Proxy({} as typeof FsPromises, {
  get: (_target, key) =>
    (process.getBuiltinModule('node:fs/promises') as Record<PropertyKey, unknown>)[key],
});

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

const argv = process.argv.slice(2);
const { run } = loadProgram(argv[0] === 'sandbox');
// What processIo() returns, with pipe and socket outputs written as above. A rejection is
// unhandled, as a top-level await's was: Node prints it and exits 1. A command that never
// answers (a bug: nothing left to wait for, no exit code) must not end as a success: exit 13,
// what Node gives an ES module whose top-level await never settles.
process.once('beforeExit', () => {
  if (answer !== undefined) return;
  process.stderr.write('packwarden: internal error: the command ended without an exit code\n');
  process.exitCode = 13;
});
void run(argv, {
  stdout: processOutput('stdout', 1, argv),
  stderr: processOutput('stderr', 2, argv),
  env: process.env,
  cwd: process.cwd(),
}).then((code) => {
  answer = code;
  if (readerClosed) process.exit(code);
  process.exitCode = code;
});
