import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, defineConfig, type Options } from 'tsup';

// The optional engine SDKs: users install them next to the CLI when a pack uses them (optional
// peer dependencies); they are imported only then, never bundled.
const ENGINE_SDKS = /^(@anthropic-ai\/claude-agent-sdk|@openai\/codex-sdk)$/;

/**
 * How `bin.ts` runs `dist/cli.cjs`, shared with the build step that makes its code cache: V8
 * accepts a cache only for the very source it was made from, wrapper included. The parameters
 * stand in for what a CommonJS bundle inside `vm.Script` lacks: `import.meta` and `import()`.
 */
const BUNDLE_WRAPPER = {
  head: '(function (exports, require, module, __filename, __dirname, __packwardenImportMetaUrl, __packwardenImportMetaResolve, __packwardenImport) {',
  tail: '\n})',
};
/**
 * `dist/cli.cjs.cache` is this, the bundle's build id and the CRC-32 of the V8 data (8 hex digits)
 * on one line, then the V8 data.
 */
const CACHE_MAGIC = 'packwarden-code-cache/1';

const shared: Options = {
  target: 'node20',
  platform: 'node',
  removeNodeProtocol: false,
  esbuildOptions(options) {
    options.mainFields = ['module', 'main'];
    // Workspace libraries are bundled from their sources: no need to build them first.
    options.conditions = ['@packwarden/source', 'module', 'import', 'node'];
  },
};

/**
 * The program as one CommonJS file for `bin.ts` to compile with a V8 code cache (Node 20 has no
 * compile cache for ES modules; bench/README.md, "CLI start-up"). Modules reached through
 * `import()` stay lazy (esbuild wraps them and runs them on first import), so `--help` still runs
 * neither the verifier nor jose. `import()` of a Node built-in becomes `require()` (a script in
 * `vm.Script` has no dynamic-import callback without flags); the engine SDKs, which are ES modules
 * only, are imported by `bin.ts` on the bundle's behalf.
 */
/** What the three files `buildBundleWithCodeCache` makes share: each one file, built quietly. */
const oneFile: Options = {
  ...shared,
  // Not this file again: its default export would rebuild everything, and this step with it.
  config: false,
  splitting: false,
  sourcemap: true,
  clean: false,
  dts: false,
  silent: true,
};

const bundle: Options = {
  ...oneFile,
  entry: { cli: 'src/index.ts' },
  format: ['cjs'],
  outExtension: () => ({ js: '.cjs' }),
  noExternal: [/./],
  define: {
    'import.meta.url': '__packwardenImportMetaUrl',
    'import.meta.resolve': '__packwardenImportMetaResolve',
  },
  esbuildPlugins: [
    {
      // Commander requires node:child_process when it loads, for executable subcommands, which
      // packwarden has none of: loading it (with node:dgram behind it) was ~0.5 ms of every
      // start-up (bench/README.md, "CLI start-up"). Commander gets a `spawn` that requires the
      // real module when called.
      name: 'packwarden-lazy-child-process',
      setup(build) {
        build.onResolve({ filter: /^node:child_process$/ }, (args) =>
          /[\\/]commander[\\/]lib[\\/]command\.js$/.test(args.importer)
            ? { path: args.path, namespace: 'packwarden-lazy-child-process' }
            : undefined,
        );
        build.onLoad({ filter: /.*/, namespace: 'packwarden-lazy-child-process' }, () => ({
          contents: "exports.spawn = (...args) => require('node:child_process').spawn(...args);",
          loader: 'js',
        }));
      },
    },
    {
      name: 'packwarden-engine-sdks',
      setup(build) {
        build.onResolve({ filter: ENGINE_SDKS }, (args) => ({
          path: args.path,
          namespace: 'packwarden-engine-sdk',
        }));
        // `await import(sdk)` becomes `await Promise.resolve().then(() => stub)`; the stub is a
        // thenable, so the await adopts what the real `import()` in bin.ts resolves to.
        build.onLoad({ filter: /.*/, namespace: 'packwarden-engine-sdk' }, (args) => ({
          contents: `export function then(onFulfilled, onRejected) { return __packwardenImport(${JSON.stringify(args.path)}).then(onFulfilled, onRejected); }`,
          loader: 'js',
        }));
      },
    },
  ],
  esbuildOptions(options, context) {
    shared.esbuildOptions?.(options, context);
    options.supported = { ...options.supported, 'dynamic-import': false };
    // Whitespace and syntax only (names stay, so every class and function keeps its `name`):
    // reading and decoding the source is a tenth of a cold start, and the file shrinks by ~30%.
    options.minifyWhitespace = true;
    options.minifySyntax = true;
  },
};

/**
 * `dist/bin.cjs`, the executable: a small CommonJS loader for dist/cli.cjs, built on its own (no
 * code splitting, no banner) so that it loads Node built-ins only. CommonJS, because an ES module
 * entry point costs Node's ESM loader (bench/README.md, "CLI start-up").
 */
const executable: Options = {
  ...oneFile,
  entry: { bin: 'src/bin.ts' },
  format: ['cjs'],
  outExtension: () => ({ js: '.cjs' }),
  define: {
    __PACKWARDEN_BUNDLE_HEAD__: JSON.stringify(BUNDLE_WRAPPER.head),
    __PACKWARDEN_BUNDLE_TAIL__: JSON.stringify(BUNDLE_WRAPPER.tail),
    __PACKWARDEN_CACHE_MAGIC__: JSON.stringify(CACHE_MAGIC),
  },
};

/** `dist/esm-resolve.js`: `import.meta.resolve` for the CommonJS executable, an ES module. */
const esmResolve: Options = {
  ...oneFile,
  entry: { 'esm-resolve': 'src/esm-resolve.ts' },
  format: ['esm'],
  sourcemap: false,
};

/**
 * Builds `dist/cli.cjs`, `dist/bin.cjs` and `dist/esm-resolve.js`, stamps the bundle with a build
 * id, and has a child Node run from it, in-process,
 * the command whose start-up matters most (`pack verify`, on a copy of the example pack signed
 * with a temp key) and `--help`, then write the V8 code cache of everything they compiled next
 * to it (only those: a larger cache costs every command more to load). Made
 * here, never at run time: the package ships it like its JavaScript, and nothing the user or a
 * pack can write feeds code that runs.
 */
async function buildBundleWithCodeCache(): Promise<void> {
  await Promise.all([build(bundle), build(executable), build(esmResolve)]);
  const source = readFileSync('dist/cli.cjs');
  const buildId = createHash('sha256').update(source).digest('hex');
  appendFileSync('dist/cli.cjs', `//# packwardenBuild=${buildId}\n`);
  const work = mkdtempSync(join(tmpdir(), 'packwarden-code-cache-'));
  try {
    cpSync(join('..', '..', 'examples', 'hello-pack'), join(work, 'pack'), { recursive: true });
    const env: NodeJS.ProcessEnv = { ...process.env, PACKWARDEN_HOME: join(work, 'home') };
    // V8 refuses a cache made under other V8 flags: the children run with none, as users do.
    delete env.NODE_OPTIONS;
    const cli = (...args: string[]) =>
      execFileSync(process.execPath, [join(process.cwd(), 'dist', 'bin.cjs'), ...args], {
        env,
        cwd: work,
        encoding: 'utf8',
        timeout: 120_000,
      });
    const { publicKeyPem } = JSON.parse(
      cli('pack', 'keygen', '--kid', 'build', '-o', 'key.pem', '--json'),
    ) as { publicKeyPem: string };
    writeFileSync(join(work, 'keys.json'), JSON.stringify({ build: publicKeyPem }));
    cli('pack', 'sign', 'pack', '--key', 'key.pem', '--kid', 'build');
    execFileSync(process.execPath, ['--input-type=module', '-e', cacheMaker('commands')], {
      env,
      cwd: work,
      stdio: ['ignore', 'ignore', 'inherit'],
      timeout: 120_000,
    });
    // The sandbox owns its process, so its cache is made in a child of its own: one boot of the
    // signed example pack (confined when bubblewrap works here), `hello`, then `shutdown`.
    const frames = `${JSON.stringify({ type: 'hello', protocols: [1] })}\n${JSON.stringify({ type: 'shutdown' })}\n`;
    // Whatever an earlier build left is gone first: the check below must see this build's file.
    rmSync(join('dist', SANDBOX_CACHE_FILE), { force: true });
    const said = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', cacheMaker('sandbox')],
      {
        env,
        cwd: work,
        input: frames,
        encoding: 'utf8',
        // What the sandbox logs (its boot's info lines) is shown only if making the cache fails.
        stdio: ['pipe', 'pipe', 'pipe'],
        timeout: 120_000,
      },
    );
    if (!said.includes('"type":"welcome"') || !said.includes('"type":"bye"'))
      throw new Error(
        `making the sandbox code cache: the boot did not say welcome and bye:\n${said}`,
      );
    if (!existsSync(join('dist', SANDBOX_CACHE_FILE)))
      throw new Error('making the sandbox code cache: no cache was written');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The cache `bin.ts` reads for `packwarden sandbox …`; every other command reads `cli.cjs.cache`. */
const SANDBOX_CACHE_FILE = 'cli.cjs.sandbox.cache';

/**
 * Runs in a child (cwd: the temp folder). Loads dist/cli.cjs exactly as bin.ts does, runs the
 * commands, and writes `CACHE_MAGIC buildId crc\n` + V8 data: for `commands`, `pack verify` and
 * `--help` into `cli.cjs.cache`; for `sandbox`, one sandbox boot (frames on stdin) into
 * `cli.cjs.sandbox.cache`, when the process exits, since the sandbox owns it until then.
 * Two caches, because one holding both cost `pack verify` 9 M instructions to load, and the
 * sandbox's code, compiled lazily without one, was ~30 M of each boot (bench/README.md).
 */
function cacheMaker(kind: 'commands' | 'sandbox'): string {
  return `
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Script } from 'node:vm';
import { crc32 } from 'node:zlib';
const dist = ${JSON.stringify(join(process.cwd(), 'dist'))};
const filename = dist + '/cli.cjs';
const source = readFileSync(filename, 'latin1');
const buildId = /packwardenBuild=([0-9a-f]{64})\\n$/.exec(source)[1];
const script = new Script(${JSON.stringify(BUNDLE_WRAPPER.head)} + source + ${JSON.stringify(BUNDLE_WRAPPER.tail)}, { filename });
const module = { exports: {} };
const url = 'file://' + filename;
script.runInThisContext()(module.exports, createRequire(filename), module, filename, dist, url, (s) => import.meta.resolve(s), (s) => import(s));
const { run } = module.exports;
const quiet = { write() { return true; } };
const io = { stdout: quiet, stderr: quiet, env: { ...process.env }, cwd: process.cwd() };
const save = (file) => {
  const data = script.createCachedData();
  const crc = crc32(data).toString(16).padStart(8, '0');
  writeFileSync(dist + '/' + file, Buffer.concat([Buffer.from(${JSON.stringify(CACHE_MAGIC)} + ' ' + buildId + ' ' + crc + '\\n'), data]));
};
if (${JSON.stringify(kind)} === 'sandbox') {
  process.once('exit', (code) => { if (code === 0) save(${JSON.stringify(SANDBOX_CACHE_FILE)}); });
  // --isolation auto: confined where bubblewrap works, never refused for a PACKWARDEN_ISOLATION the builder's environment may set.
  const argv = ['sandbox', '--stdio', '--require-signed-pack', '--isolation', 'auto', '--agent', 'pack', '--state-dir', 'state', '--keys', 'keys.json'];
  const code = await run(argv, { ...io, stdout: process.stdout });
  if (code !== 0) throw new Error('making the sandbox code cache: packwarden ' + argv.join(' ') + ' exited ' + code);
} else {
  for (const argv of [['pack', 'verify', 'pack', '--keys', 'keys.json'], ['--help']]) {
    const code = await run(argv, io);
    if (code !== 0) throw new Error('making the code cache: packwarden ' + argv.join(' ') + ' exited ' + code);
  }
  save('cli.cjs.cache');
}
`;
}

export default defineConfig({
  ...shared,
  // The library entry: ES modules, split by command so importers load only what they use.
  entry: ['src/index.ts'],
  format: ['esm'],
  // Commander's types are inlined: consumers do not install the bundled commander (TS2307).
  dts: { entry: 'src/index.ts', resolve: ['commander'] },
  sourcemap: true,
  clean: true,
  splitting: true,
  noExternal: [/^(?!@anthropic-ai\/claude-agent-sdk|@openai\/codex-sdk)/],
  external: ['@anthropic-ai/claude-agent-sdk', '@openai/codex-sdk'],
  banner: {
    // Some bundled dependencies are CommonJS and call require() for Node built-ins.
    js: "import { createRequire as __packwardenCreateRequire } from 'node:module'; const require = __packwardenCreateRequire(import.meta.url);",
  },
  onSuccess: buildBundleWithCodeCache,
});
