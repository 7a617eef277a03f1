// bench/install: installing a 5,000-file / 50 MB pack from a local static store with
// @packwarden/store-client, next to `tar -xzf` of the very same archive, in one run.
//
//   node bench/install/run.mjs [--runs N] [--keep] [--no-oci] [--against REF,…]
//
// --against REF,… adds an in-process row for store-client built from each git REF, and builds the
// current code the same way (buildAt in ../lib.mjs), all in the same interleaved runs.
//
// The OCI case (issue 12): the same pack pushed to a throwaway local registry
// (scripts/registry.sh, Debian's docker-registry) and installed back with the built CLI
// (`pack install oci://… --to DIR --plain-http`, a whole process: resolve, pull with the layer
// digest checked, extract, pack digest against the annotation).
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAt, fmtMs, folderCreationMicros, repoRoot, verdict, watchCpuTime } from '../lib.mjs';

const args = process.argv.slice(2);
const runs = Number(args[args.indexOf('--runs') + 1]) || 5;
const keep = args.includes('--keep');
const oci = !args.includes('--no-oci');
const againstRefs = args.includes('--against')
  ? (args[args.indexOf('--against') + 1] ?? '').split(',').filter(Boolean)
  : [];
const TARGET = 1.5;
const FILES = 5_000;
const TOTAL_BYTES = 50 * 1024 * 1024;

// Build the package (and the workspace packages it imports) when dist/ is missing.
const tsup = join(repoRoot, 'node_modules', '.bin', 'tsup');
for (const name of ['pack-digest', 'pack-manifest', 'pack-signature', 'store-client']) {
  const dir = join(repoRoot, 'packages', name);
  if (!existsSync(join(dir, 'dist', 'index.js'))) execFileSync(tsup, { cwd: dir, stdio: 'ignore' });
}
const here = dirname(fileURLToPath(import.meta.url));
const { buildStaticStore, installPack, openStore, pushPackFolder } =
  await import('../../packages/store-client/dist/index.js');

// A pack of 5,000 files of random lowercase words (about 1.6:1 under gzip, like prompts and
// code; a pack of zeros would measure nothing but the file system) in 100 folders.
const work = await mkdtemp(join(tmpdir(), 'bench-install-'));
const packDir = join(work, 'pack');
await mkdir(packDir);
await writeFile(
  join(packDir, 'agent.yaml'),
  'apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata:\n  name: bench-pack\n  version: 1.0.0\nspec:\n  engine: claude\n',
);
const textOf = (length) => {
  const bytes = randomBytes(length);
  for (let i = 0; i < length; i++) {
    const b = bytes[i] % 32;
    bytes[i] = b < 26 ? 97 + b : b < 31 ? 32 : 10;
  }
  return bytes;
};
const perFile = Math.floor(TOTAL_BYTES / FILES);
for (let d = 0; d < 100; d++) await mkdir(join(packDir, 'data', `d${d}`), { recursive: true });
for (let i = 0; i < FILES - 1; i++) {
  await writeFile(join(packDir, 'data', `d${i % 100}`, `f${i}.md`), textOf(perFile), {
    mode: i % 500 === 0 ? 0o755 : 0o644,
  });
}
const storeDir = join(work, 'store');
const built = await buildStaticStore(packDir, { out: storeDir });
const archive = join(storeDir, built.packs[0].archive);
const archiveBytes = (await readFile(archive)).length;

// Interleaved runs, each after `sync`, so that neither side pays for the other's write-back. Every
// output stays until the end: removing 5,000 files before the next run made that run's own files
// slower to create (folderCreationMicros in lib.mjs).
const installScript = join(here, 'install-once.mjs');
const store = await openStore({ url: storeDir, env: {}, cacheDir: false });
// In-process rows: this checkout's dist, or with --against every build bundled alike.
const libraries = [{ label: '', installPack, store }];
const builds = [];
if (againstRefs.length > 0) {
  libraries.length = 0;
  for (const ref of ['worktree', ...againstRefs]) {
    const built = await buildAt(ref, { packages: ['store-client'] });
    builds.push(built.dir);
    const library = await import(built.lib('store-client'));
    libraries.push({
      label: ` @${ref}`,
      installPack: library.installPack,
      store: await library.openStore({ url: storeDir, env: {}, cacheDir: false }),
    });
  }
}
const run = (command, argv, env = process.env) => {
  const result = spawnSync(command, argv, { encoding: 'utf8', env });
  if (result.status !== 0) throw new Error(`${command} ${argv.join(' ')}: ${result.stderr}`);
  return result.stdout;
};
const time = async (fn) => {
  execFileSync('sync');
  const start = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, value };
};
// The CLI (`packwarden store install`, the bundled executable) and the registry case: one push
// (timed), then installs interleaved with the others.
const cliBin = join(repoRoot, 'apps', 'cli', 'dist', 'bin.cjs');
if (!existsSync(cliBin))
  execFileSync('pnpm', ['-s', 'build'], { cwd: join(repoRoot, 'apps', 'cli') });
let registryDir;
let ociRef;
let pushMs;
if (oci) {
  registryDir = join(work, 'registry');
  // Stopped on any exit, a failed run included (synchronous: the only kind 'exit' allows).
  process.on('exit', () => {
    if (registryDir)
      spawnSync('bash', [join(repoRoot, 'scripts', 'registry.sh'), 'stop', registryDir]);
  });
  const host = run('bash', [join(repoRoot, 'scripts', 'registry.sh'), 'start', registryDir])
    .trim()
    .split('\n')
    .pop();
  ociRef = `oci://${host}/bench/bench-pack`;
  const pushed = await time(() => pushPackFolder(packDir, ociRef, { plainHttp: true, env: {} }));
  pushMs = pushed.ms;
}
const cpuTime = watchCpuTime();
const creating = folderCreationMicros(work);
const samples = { tar: [], proc: [], cli: [], lib: libraries.map(() => []), oci: [] };
let peakRssKiB = 0;
for (let i = 0; i <= runs; i++) {
  const out = join(work, `tar-${i}`);
  await mkdir(out);
  const tar = await time(() => run('tar', ['-xzf', archive, '-C', out]));
  // A whole Node process, the way a CLI user pays for it.
  const proc = await time(() =>
    run(process.execPath, [installScript, storeDir, join(work, `proc-${i}`)]),
  );
  peakRssKiB = Math.max(peakRssKiB, Number(/maxRSS=(\d+)/.exec(proc.value)?.[1] ?? 0));
  // The executable a user runs: one bundle, its own code cache.
  const cli = await time(() =>
    run(process.execPath, [cliBin, 'store', 'install', 'pack/bench-pack', '--store', storeDir], {
      ...process.env,
      PACKWARDEN_HOME: join(work, `cli-${i}`),
    }),
  );
  // In-process: what a service embedding the library pays per install (store opened once).
  const libs = [];
  for (const [v, library] of libraries.entries()) {
    libs.push(
      await time(() =>
        library.installPack(
          library.store,
          { type: 'pack', slug: 'bench-pack' },
          { home: join(work, `lib-${i}-${v}`), env: {} },
        ),
      ),
    );
  }
  let ociRun;
  if (oci) {
    ociRun = await time(() =>
      run(process.execPath, [
        cliBin,
        'pack',
        'install',
        ociRef,
        '--to',
        join(work, `oci-${i}`),
        '--plain-http',
      ]),
    );
  }
  if (i === 0) continue; // warm-up
  if (ociRun) samples.oci.push(ociRun.ms);
  samples.tar.push(tar.ms);
  samples.proc.push(proc.ms);
  samples.cli.push(cli.ms);
  libs.forEach((lib, v) => samples.lib[v].push(lib.ms));
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const tar = median(samples.tar);
const proc = median(samples.proc);
const cli = median(samples.cli);

console.log(
  `pack: ${FILES} files, ${(TOTAL_BYTES / 2 ** 20).toFixed(0)} MiB; archive ${(archiveBytes / 2 ** 20).toFixed(1)} MiB .tar.gz; median of ${runs} interleaved runs after a warm-up`,
);
console.log(`  tar -xzf (whole process)                      ${fmtMs(tar)}`);
console.log(
  `  packwarden store install (the CLI)            ${fmtMs(cli)}  ${(cli / tar).toFixed(2)}×  ${verdict(cli / tar, TARGET)}`,
);
console.log(
  `  installPack, whole Node process              ${fmtMs(proc)}  ${(proc / tar).toFixed(2)}×  ${verdict(proc / tar, TARGET)}  peak RSS ${(peakRssKiB / 1024).toFixed(0)} MiB`,
);
libraries.forEach(({ label }, v) => {
  const lib = median(samples.lib[v]);
  console.log(
    `  ${`installPack, in-process (library)${label}`.padEnd(44)} ${fmtMs(lib)}  ${(lib / tar).toFixed(2)}×  ${verdict(lib / tar, TARGET)}`,
  );
});
if (oci) {
  const ociMs = median(samples.oci);
  console.log(
    `${'  pack install oci://…, whole CLI process'.padEnd(46)} ${fmtMs(ociMs)}  ${(ociMs / tar).toFixed(2)}×  local registry; store push once ${fmtMs(pushMs)}`,
  );
}
console.log(
  `  making a folder in ${tmpdir()}: ${creating.toFixed(0)} µs before the runs, ${folderCreationMicros(work).toFixed(0)} µs after (slow when many files were deleted there in the last minutes)`,
);
const spent = cpuTime();
if (spent !== undefined) console.log(`  ${spent}`);
console.log(
  '  installPack also hashes the archive and every file (the pack digest), judges every header and validates agent.yaml.',
);

// Before the work folder (which holds its pid file) is removed.
if (registryDir) {
  spawnSync('bash', [join(repoRoot, 'scripts', 'registry.sh'), 'stop', registryDir]);
  registryDir = undefined;
}
for (const dir of builds) await rm(dir, { recursive: true, force: true });
if (keep) console.log(`kept ${work}`);
else await rm(work, { recursive: true, force: true });
