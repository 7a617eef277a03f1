#!/usr/bin/env node
// The packages as consumers install them (issue 13 items 1 and 2).
//
//   node scripts/consumer-check.mjs              # build, pack, install, typecheck, run
//   node scripts/consumer-check.mjs --no-build   # use the dist/ folders already built
//   node scripts/consumer-check.mjs --keep       # keep the consumer project (its path is printed)
//   node scripts/consumer-check.mjs --tarballs DIR   # check tarballs packed earlier (no build, no
//                                                    # pack): e.g. a release's, or a known-bad set
//
// Every typecheck in the workspace reads src/ through the private `@packwarden/source` condition,
// so nothing there ever reads a published file. This script does what a new user does:
//   1. builds every package (tsup) and `pnpm pack`s each into a temp dir;
//   2. reads each tarball's package.json: no `@packwarden/source` condition may survive packing
//      (it points at src/, which is not shipped), every file an `exports`/`main`/`types`/`bin`
//      target names must be in the tarball, LICENSE everywhere, SPEC.md in pack-digest's;
//   3. installs the tarballs with npm into a fresh project OUTSIDE the workspace (third-party
//      dependencies from npm's cache, the registry only for what the cache lacks);
//   4. typechecks an import of every `exports` subpath, and every ```ts block of the READMEs
//      (scripts/readme-snippets.mjs), with `module: NodeNext`, `skipLibCheck: false` and no custom
//      conditions, using the workspace's pinned TypeScript;
//   5. runs node on an import of every entry point and checks that named exports exist.
// The last line is "consumer check: passed" or "consumer check: FAILED (<steps>)"; exit 1 on failure.
import { execFile as execFileCallback } from 'node:child_process';
import {
  copyFileSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
  mkdirSync,
  readdirSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { writeSnippets, snippetLocation } from './readme-snippets.mjs';

const execFile = promisify(execFileCallback);
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
const TYPES_NODE = '@types/node@20.19.43';
const SOURCE_CONDITION = '@packwarden/source';
/** The longest any one child process (build, pack, npm install, tsc, node) may run. */
const STEP_TIMEOUT_MS = 10 * 60 * 1000;

/** The published folders, in dependency order (the order does not matter to npm). */
const PACKAGE_DIRS = [
  'packages/pack-manifest',
  'packages/pack-digest',
  'packages/pack-signature',
  'packages/trust-root',
  'packages/store-client',
  'packages/runner-host',
  'packages/engines',
  'packages/sandbox',
  'apps/cli',
];

/**
 * Named exports each entry point must have at run time (a few per entry: the check is that the
 * built file is the package's, not an empty or wrong bundle). An entry missing here fails the check:
 * a new subpath must say what it exports.
 */
const EXPECTED_EXPORTS = {
  '@packwarden/pack-manifest': ['loadPackManifest', 'parsePackManifest', 'formatManifestIssue'],
  '@packwarden/pack-manifest/resolve': [
    'kidProblem',
    'isPackName',
    'PackManifestError',
    'terminalSafe',
  ],
  '@packwarden/pack-manifest/fs': [
    'writeFileAtomic',
    'readBoundedFile',
    'removeStaleTemporaries',
    'readMacEntry',
  ],
  '@packwarden/pack-digest': ['computePackDigest', 'diffPackManifests', 'PackDigestError'],
  '@packwarden/pack-signature': ['signPack', 'generateKeypair', 'PackSignatureError'],
  '@packwarden/trust-root': ['loadPackTrustRoot', 'selectTrustedKey', 'parsePins'],
  '@packwarden/trust-root/env': ['TRUST_ROOT_ENV_VARIABLES'],
  '@packwarden/store-client': ['installPack', 'extractArchive', 'StoreError'],
  '@packwarden/store-client/env': ['STORE_CLIENT_ENV_VARIABLES'],
  '@packwarden/store-client/store': ['openStore', 'parseArtifactRef', 'StoreError'],
  '@packwarden/runner-host': ['startRunnerHost', 'FrameDecoder', 'RunnerHostError'],
  '@packwarden/runner-host/protocol': ['runFrameSchema', 'hostFrameSchemas', 'framesJsonSchema'],
  '@packwarden/runner-host/conformance': ['runConformance', 'conformanceCases', 'RawPeer'],
  '@packwarden/runner-host/frames.schema.json': ['default'],
  '@packwarden/engines': ['loadPackEngine', 'loadCustomEngine', 'EngineError'],
  '@packwarden/engines/installed': ['findInstalledEngine'],
  '@packwarden/sandbox': ['serveSandbox', 'bootPack', 'SandboxError'],
  '@packwarden/sandbox/env': ['SANDBOX_ENV_VARIABLES'],
  packwarden: ['run', 'createProgram', 'VERSION', 'CliError'],
};

const args = new Set();
let givenTarballs;
for (let index = 2; index < process.argv.length; index++) {
  const arg = process.argv[index];
  if (arg === '--tarballs' && process.argv[index + 1] !== undefined) {
    givenTarballs = resolve(process.argv[++index]);
  } else if (['--no-build', '--keep'].includes(arg)) {
    args.add(arg);
  } else {
    console.error(`consumer-check: unknown option ${arg}`);
    process.exit(2);
  }
}

const failures = [];
const log = (line) => console.error(line);
const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;

async function run(command, argv, options = {}) {
  try {
    // Bounded: a hung npm or tsc fails the check instead of stalling CI.
    return await execFile(command, argv, {
      maxBuffer: 64 * 1024 * 1024,
      timeout: STEP_TIMEOUT_MS,
      killSignal: 'SIGKILL',
      ...options,
    });
  } catch (error) {
    const output = `${error.stdout ?? ''}${error.stderr ?? ''}`.trim();
    throw new Error(`${command} ${argv.join(' ')} failed (exit ${error.code})\n${output}`, {
      cause: error,
    });
  }
}

/** Runs `work` over `items`, at most `limit` at a time (the machine has few cores). */
async function pool(items, limit, work) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index], index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

function fail(step, message) {
  failures.push(step);
  log(`✗ ${step}: ${message}`);
}

/** Every target string under an `exports` value (conditions, nested conditions, arrays). */
function exportTargets(value) {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(exportTargets);
  if (value && typeof value === 'object') return Object.values(value).flatMap(exportTargets);
  return [];
}

const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'));

/** An `exports` value without the private source condition (what publishConfig.exports must be). */
function withoutSourceCondition(value) {
  if (typeof value === 'string' || value === null || value === undefined) return value;
  if (Array.isArray(value)) return value.map(withoutSourceCondition);
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== SOURCE_CONDITION)
      .map(([key, inner]) => [key, withoutSourceCondition(inner)]),
  );
}

/** Every condition name used anywhere under an `exports` value. */
function exportConditions(value) {
  if (Array.isArray(value)) return value.flatMap(exportConditions);
  if (!value || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, inner]) => [key, ...exportConditions(inner)]);
}

/** Checks one packed tarball's manifest and file list; returns its published package.json. */
async function inspectTarball(tarball) {
  const { stdout: listing } = await run('tar', ['-tzf', tarball]);
  const files = new Set(
    listing
      .split('\n')
      .filter(Boolean)
      .map((f) => f.replace(/^package\//, '')),
  );
  const { stdout: manifestText } = await run('tar', ['-xzOf', tarball, 'package/package.json']);
  const manifest = JSON.parse(manifestText);
  const where = `${manifest.name} (${basename(tarball)})`;
  const problems = [];
  const source = PACKAGE_DIRS.map((dir) => readJson(join(repoRoot, dir, 'package.json'))).find(
    (candidate) => candidate.name === manifest.name,
  );
  // publishConfig.exports is written by hand next to exports: they must say the same thing.
  if (
    JSON.stringify(manifest.exports) !== JSON.stringify(withoutSourceCondition(source?.exports))
  ) {
    problems.push(
      'the published exports differ from the workspace exports without the source condition',
    );
  }
  const conditions = exportConditions(manifest.exports);
  if (conditions.includes(SOURCE_CONDITION) || manifestText.includes(SOURCE_CONDITION)) {
    problems.push(
      `the published package.json still names the private "${SOURCE_CONDITION}" condition`,
    );
  }
  const targets = new Set(
    [
      ...exportTargets(manifest.exports),
      manifest.main,
      manifest.types,
      ...(typeof manifest.bin === 'string' ? [manifest.bin] : Object.values(manifest.bin ?? {})),
    ].filter((target) => typeof target === 'string'),
  );
  for (const target of targets) {
    const path = target.replace(/^\.\//, '');
    if (path.includes('*')) continue;
    if (!files.has(path))
      problems.push(`${target} is named by the manifest but not in the tarball`);
  }
  if (!files.has('LICENSE')) problems.push('no LICENSE in the tarball');
  if (!files.has('README.md')) problems.push('no README.md in the tarball');
  if (manifest.name === '@packwarden/pack-digest' && !files.has('SPEC.md')) {
    problems.push('SPEC.md (the digest specification its README links to) is not in the tarball');
  }
  if ([...files].some((file) => file.startsWith('src/') || file.startsWith('test/'))) {
    problems.push('sources or tests are in the tarball');
  }
  for (const problem of problems) fail('tarballs', `${where}: ${problem}`);
  return manifest;
}

/** The import specifiers of every `exports` subpath of a published manifest. */
function entrySpecifiers(manifest) {
  const exportsField = manifest.exports;
  if (typeof exportsField === 'string' || Array.isArray(exportsField)) return [manifest.name];
  return Object.keys(exportsField ?? { '.': null })
    .filter((subpath) => subpath !== './package.json' && !subpath.includes('*'))
    .map((subpath) => (subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`));
}

const CONSUMER_TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    lib: ['ES2023'],
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    skipLibCheck: false,
    noEmit: true,
    types: ['node'],
    resolveJsonModule: true,
    verbatimModuleSyntax: true,
  },
  include: ['entries.ts', 'snippets/**/*.ts'],
};

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'packwarden-consumer-'));
  const tarballDir = join(work, 'tarballs');
  const project = join(work, 'project');
  mkdirSync(tarballDir);
  mkdirSync(project);
  try {
    if (givenTarballs !== undefined) {
      for (const file of readdirSync(givenTarballs).filter((name) => name.endsWith('.tgz'))) {
        copyFileSync(join(givenTarballs, file), join(tarballDir, file));
      }
    } else {
      if (!args.has('--no-build')) {
        log(`› build (${elapsed()})`);
        await run('pnpm', ['-s', 'build'], { cwd: repoRoot });
      }
      log(`› pack (${elapsed()})`);
      await pool(PACKAGE_DIRS, 3, (dir) =>
        run('pnpm', ['pack', '--pack-destination', tarballDir], { cwd: join(repoRoot, dir) }),
      );
    }
    const tarballs = readdirSync(tarballDir)
      .filter((file) => file.endsWith('.tgz'))
      .map((file) => join(tarballDir, file));
    if (tarballs.length !== PACKAGE_DIRS.length) {
      throw new Error(`expected ${PACKAGE_DIRS.length} tarballs, found ${tarballs.length}`);
    }
    const manifests = await pool(tarballs, 4, inspectTarball);

    log(`› install into ${project} (${elapsed()})`);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'packwarden-consumer', private: true, type: 'module' }, null, 2),
    );
    // Outside the workspace, so neither pnpm's links nor the repo's .npmrc take part.
    await run(
      'npm',
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--ignore-scripts',
        '--loglevel=error',
        ...tarballs,
        TYPES_NODE,
      ],
      { cwd: project, env: { ...process.env, npm_config_workspaces: 'false' } },
    );

    const specifiers = manifests.flatMap(entrySpecifiers).sort();
    const missing = specifiers.filter((specifier) => !(specifier in EXPECTED_EXPORTS));
    for (const specifier of missing)
      fail('run', `${specifier} has no expected exports listed in scripts/consumer-check.mjs`);
    const gone = Object.keys(EXPECTED_EXPORTS).filter(
      (specifier) => !specifiers.includes(specifier),
    );
    for (const specifier of gone) fail('run', `${specifier} is listed but no package exports it`);

    log(`› typecheck ${specifiers.length} entry points and the README snippets (${elapsed()})`);
    const entryLines = specifiers.map((specifier, index) =>
      specifier.endsWith('.json')
        ? `import entry${index} from '${specifier}' with { type: 'json' };`
        : `import * as entry${index} from '${specifier}';`,
    );
    writeFileSync(
      join(project, 'entries.ts'),
      `${entryLines.join('\n')}\nexport const entries = [${specifiers.map((_, i) => `entry${i}`).join(', ')}];\n`,
    );
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(CONSUMER_TSCONFIG, null, 2));
    const snippets = writeSnippets(repoRoot, join(project, 'snippets'));
    try {
      await run(process.execPath, [tsc, '-p', project, '--pretty', 'false'], { cwd: project });
      log(`  ${specifiers.length} entry points and ${snippets.length} README blocks typecheck`);
    } catch (error) {
      // A diagnostic's continuation lines are indented: keep them with the line they continue.
      const diagnostics = [];
      for (const line of error.message.split('\n').slice(1)) {
        if (/^\s/.test(line) && diagnostics.length > 0)
          diagnostics[diagnostics.length - 1] += `\n${line}`;
        else if (line.trim()) diagnostics.push(line);
      }
      const entryErrors = diagnostics.filter((line) => !line.startsWith('snippets/'));
      const snippetErrors = diagnostics.filter((line) => line.startsWith('snippets/'));
      if (entryErrors.length > 0) fail('types', `\n${entryErrors.join('\n')}`);
      if (snippetErrors.length > 0) {
        fail(
          'readme-snippets',
          `\n${snippetErrors.map((line) => snippetLocation(line, snippets)).join('\n')}`,
        );
      }
    }

    log(`› run (${elapsed()})`);
    const runner = [
      `const expected = ${JSON.stringify(EXPECTED_EXPORTS)};`,
      'let bad = 0;',
      'for (const [specifier, names] of Object.entries(expected)) {',
      "  const options = specifier.endsWith('.json') ? { with: { type: 'json' } } : undefined;",
      '  let module;',
      '  try { module = await import(specifier, options); }',
      '  catch (error) { console.log(`${specifier}: import failed: ${error.message}`); bad++; continue; }',
      '  const absent = names.filter((name) => module[name] === undefined);',
      '  if (absent.length > 0) { console.log(`${specifier}: missing exports ${absent.join(", ")}`); bad++; }',
      '}',
      'process.exitCode = bad > 0 ? 1 : 0;',
    ].join('\n');
    writeFileSync(join(project, 'run.mjs'), runner);
    try {
      await run(process.execPath, ['run.mjs'], { cwd: project });
      const { stdout } = await run(
        join(project, 'node_modules', '.bin', 'packwarden'),
        ['--version'],
        { cwd: project },
      );
      if (stdout.trim() !== manifests.find((m) => m.name === 'packwarden')?.version) {
        fail('run', `packwarden --version printed ${JSON.stringify(stdout.trim())}`);
      }
    } catch (error) {
      fail('run', error.message);
    }
  } catch (error) {
    fail('setup', error.message);
  } finally {
    if (args.has('--keep')) log(`kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
  const verdict =
    failures.length === 0 ? 'passed' : `FAILED (${[...new Set(failures)].join(', ')})`;
  console.log(`consumer check: ${verdict} in ${elapsed()}`);
  process.exitCode = failures.length === 0 ? 0 : 1;
}

await main();
