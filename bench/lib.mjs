// Shared helpers for the bench/ scripts: building what they run, timing commands, printing.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
export const cliBin = join(repoRoot, 'apps', 'cli', 'dist', 'bin.cjs');

/** Builds the CLI bundle and the named packages' dist when missing. */
export function ensureBuilt(packages = []) {
  const tsup = join(repoRoot, 'node_modules', '.bin', 'tsup');
  if (!existsSync(tsup))
    throw new Error('dependencies are not installed: run `npx -y pnpm@10.34.8 install` first');
  for (const name of packages) {
    const dir = join(repoRoot, 'packages', name);
    if (!existsSync(join(dir, 'dist', 'index.js')))
      execFileSync(tsup, { cwd: dir, stdio: 'ignore' });
  }
  if (!existsSync(cliBin))
    execFileSync(tsup, { cwd: join(repoRoot, 'apps', 'cli'), stdio: 'ignore' });
}

// Prints the process's peak RSS (KiB) on stderr when it exits, whatever the program is.
const RSS_PROBE =
  'data:text/javascript,process.on("exit",()=>process.stderr.write("\\npeak-rss-kib="+process.resourceUsage().maxRSS+"\\n"))';

/**
 * Runs a command `runs` times after one warm-up run and returns the median wall time in ms,
 * plus the peak RSS of a Node command when `node` is set. Fails loudly on a non-zero exit.
 */
export function timeCommand(command, args, { runs = 5, cwd, node = false } = {}) {
  const argv = node ? ['--import', RSS_PROBE, ...args] : args;
  const once = () => {
    const start = process.hrtime.bigint();
    const result = spawnSync(command, argv, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (result.status !== 0)
      throw new Error(`${command} ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
    const rss = /peak-rss-kib=(\d+)/.exec(result.stderr ?? '');
    return { ms, rssMiB: rss ? Number(rss[1]) / 1024 : undefined, stdout: result.stdout };
  };
  once();
  const samples = Array.from({ length: runs }, once);
  const sorted = [...samples].sort((a, b) => a.ms - b.ms);
  const median = sorted[Math.floor(sorted.length / 2)];
  return {
    ms: median.ms,
    rssMiB: Math.max(...samples.map((s) => s.rssMiB ?? 0)) || undefined,
    stdout: median.stdout,
  };
}

/**
 * Times several commands in interleaved rounds (one of each per round, after a warm-up round),
 * so that a slow spell of a shared machine hits baseline and candidates alike. Returns, per
 * command, the median time and the median of its per-round ratio to the first command (or to
 * the entry at index `baseline`).
 * `entries`: [{ name, command, args, cwd?, env?, baseline?, node?, measure?(stdout) → ms }].
 */
export function timeInterleaved(entries, { runs = 5 } = {}) {
  const once = (entry) => {
    const argv = entry.node ? ['--import', RSS_PROBE, ...entry.args] : entry.args;
    const start = process.hrtime.bigint();
    const result = spawnSync(entry.command, argv, {
      cwd: entry.cwd,
      env: entry.env ?? process.env,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    const wall = Number(process.hrtime.bigint() - start) / 1e6;
    if (result.status !== 0)
      throw new Error(
        `${entry.command} ${entry.args.join(' ')} exited ${result.status}: ${result.stderr}`,
      );
    const rss = /peak-rss-kib=(\d+)/.exec(result.stderr ?? '');
    return {
      ms: entry.measure ? entry.measure(result.stdout) : wall,
      rssMiB: rss ? Number(rss[1]) / 1024 : undefined,
    };
  };
  entries.forEach(once);
  const samples = entries.map(() => []);
  for (let round = 0; round < runs; round++)
    entries.forEach((entry, i) => samples[i].push(once(entry)));
  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  return entries.map((entry, i) => ({
    name: entry.name,
    ms: median(samples[i].map((s) => s.ms)),
    ratio: median(samples[i].map((s, round) => s.ms / samples[entry.baseline ?? 0][round].ms)),
    rssMiB: Math.max(...samples[i].map((s) => s.rssMiB ?? 0)) || undefined,
  }));
}

/**
 * This environment without `NODE_EXTRA_CA_CERTS`, or undefined when it is not set. Node parses
 * that file at every start, before any JavaScript runs (144 certificates on the machine these
 * benches were written on: `node -e 0` 60–80 ms instead of 24 ms). No packwarden command can
 * avoid it, and it inflates `node -e 0` as much as the command: benches print their rows both
 * ways so that neither reading hides the other.
 */
export const envWithoutExtraCaCerts = (() => {
  if (process.env.NODE_EXTRA_CA_CERTS === undefined) return undefined;
  const { NODE_EXTRA_CA_CERTS: _ignored, ...rest } = process.env;
  return rest;
})();

/**
 * Microseconds to make one folder in `parent` (median of 21; the folders stay until the caller
 * removes `parent`). ext4 passes over the inodes freed in the last minutes when it makes a file or
 * folder: ~40 µs on a quiet file system here, 0.6–1.2 ms after a few hundred deletions (bench
 * README, "Issue 14, fifth pass"). Benches that make many files print it, and remove what they
 * made only after their rounds, so that their own deletions do not slow what they time.
 */
export function folderCreationMicros(parent) {
  const dir = mkdtempSync(join(parent, 'mkdir-'));
  const times = [];
  for (let i = 0; i < 21; i++) {
    const start = process.hrtime.bigint();
    mkdirSync(join(dir, String(i)));
    times.push(Number(process.hrtime.bigint() - start) / 1e3);
  }
  return times.sort((a, b) => a - b)[10];
}

/**
 * Starts watching what this machine's CPUs spent their time on (Linux `/proc/stat`); the function
 * it returns says, for the time since, which share went to other guests of the hypervisor
 * (steal) and to waiting for the disk (iowait), as one line for a bench to print. On this VM
 * `node -e 0` took 25–100 ms within one hour, with up to 50% steal while the disk wrote back
 * (bench README, "Issue 14, sixth pass"): ratios to a baseline in the same rounds hold up better
 * than absolute times, and this line says how much to trust either. Undefined off Linux.
 */
export function watchCpuTime() {
  const read = () => {
    try {
      const line = readFileSync('/proc/stat', 'latin1').split('\n')[0];
      // cpu user nice system idle iowait irq softirq steal …
      return line.trim().split(/\s+/).slice(1).map(Number);
    } catch {
      return undefined;
    }
  };
  const start = read();
  return () => {
    const end = read();
    if (start === undefined || end === undefined) return undefined;
    const delta = end.map((value, i) => value - (start[i] ?? 0));
    const total = delta.slice(0, 8).reduce((sum, value) => sum + value, 0);
    if (total <= 0) return undefined;
    const share = (i) => `${((100 * (delta[i] ?? 0)) / total).toFixed(1)}%`;
    return `CPU time during the run: steal ${share(7)}, iowait ${share(4)} (above a few percent, other guests or the disk slowed what was timed)`;
  };
}

export function fmtMs(ms) {
  return `${ms.toFixed(0).padStart(6)} ms`;
}

export function verdict(ratio, target) {
  return ratio <= target ? `ok (target ≤ ${target}×)` : `MISSED (target ≤ ${target}×)`;
}

/**
 * Builds packwarden from the sources at git `ref` (or from the working tree when `ref` is
 * 'worktree') into a fresh temporary folder, so that a bench can measure a change against its
 * baseline in one run on one machine. Every `@packwarden/*` import resolves to the sources of
 * the same ref (or, for the packages named in `overlay`, to the working tree's); third-party
 * packages come from this checkout's node_modules. Returns the
 * folder, the CLI's executable (`bin.cjs`, `bin.js` before issue 14's CommonJS entry; when `cli`) and `lib(name)`: one self-contained ESM bundle of
 * each named package. Both sides of a comparison should come from this function, so that they
 * are bundled alike.
 */
export async function buildAt(ref, { cli = false, packages = [], overlay = [] } = {}) {
  const {
    mkdtempSync,
    readdirSync,
    readFileSync,
    cpSync,
    realpathSync,
    symlinkSync,
    writeFileSync,
  } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { createRequire } = await import('node:module');
  // esbuild is tsup's dependency; pnpm links it beside tsup's real folder only.
  const tsup = realpathSync(join(repoRoot, 'node_modules', 'tsup', 'package.json'));
  const esbuild = createRequire(tsup)('esbuild');
  const dir = mkdtempSync(join(tmpdir(), `pw-bench-build-${ref.replace(/[^\w.-]/g, '_')}-`));
  let sources = repoRoot;
  if (ref !== 'worktree') {
    sources = join(dir, 'src');
    execFileSync('mkdir', ['-p', sources]);
    execFileSync(
      'sh',
      ['-c', `git archive "$1" packages apps | tar -x -C "$2"`, 'sh', ref, sources],
      {
        cwd: repoRoot,
      },
    );
    // `overlay`: packages whose working-tree sources replace the ref's, so that a comparison
    // isolates one change from whatever else moved in the checkout.
    for (const name of overlay) {
      cpSync(join(repoRoot, 'packages', name, 'src'), join(sources, 'packages', name, 'src'), {
        recursive: true,
      });
    }
  }
  // `@packwarden/<name>[/<subpath>]` → the `@packwarden/source` file its package.json exports.
  const workspaceSources = {
    name: 'workspace-sources',
    setup(build) {
      build.onResolve({ filter: /^@packwarden\// }, ({ path }) => {
        const [, name, sub] = /^@packwarden\/([^/]+)(\/.*)?$/.exec(path);
        const folder = join(sources, 'packages', name);
        const manifest = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8'));
        const entry = manifest.exports[sub ? `.${sub}` : '.'];
        const file = typeof entry === 'string' ? entry : entry?.['@packwarden/source'];
        if (!file) return { errors: [{ text: `${path}: no @packwarden/source export` }] };
        return { path: join(folder, file) };
      });
    },
  };
  const nodePaths = [
    ...readdirSync(join(repoRoot, 'packages')).map((name) =>
      join(repoRoot, 'packages', name, 'node_modules'),
    ),
    join(repoRoot, 'apps', 'cli', 'node_modules'),
    join(repoRoot, 'node_modules'),
  ];
  const common = {
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    plugins: [workspaceSources],
    nodePaths,
    mainFields: ['module', 'main'],
    conditions: ['@packwarden/source', 'module', 'import', 'node'],
    external: ['@anthropic-ai/claude-agent-sdk', '@openai/codex-sdk'],
    banner: {
      js: "import { createRequire as __benchCreateRequire } from 'node:module'; const require = __benchCreateRequire(import.meta.url);",
    },
    logLevel: 'error',
  };
  for (const name of packages) {
    await esbuild.build({
      ...common,
      entryPoints: [join(sources, 'packages', name, 'src', 'index.ts')],
      outfile: join(dir, 'lib', name, 'index.js'),
    });
  }
  let bin;
  if (cli) {
    // The CLI is built by its own tsup config (at `ref`), as `pnpm build` does: since issue 14 the
    // build is more than one bundle (dist/cli.cjs and its V8 code cache). The config runs in a
    // copy of the tree whose node_modules repeat the checkout's symlinks: pnpm's links are
    // relative, so `@packwarden/*` resolve to the copy's sources and the rest to this checkout.
    const tree = join(dir, 'tree');
    const parts = ['packages', 'apps/cli', 'examples', 'tsconfig.base.json'];
    const skip = (path) => !/\/(node_modules|dist)$/.test(path);
    for (const part of parts) {
      const from = ref === 'worktree' ? join(repoRoot, part) : join(sources, part);
      if (ref !== 'worktree' && part !== 'packages' && part !== 'apps/cli')
        execFileSync(
          'sh',
          ['-c', `git archive "$1" "$2" | tar -x -C "$3"`, 'sh', ref, part, sources],
          {
            cwd: repoRoot,
          },
        );
      cpSync(from, join(tree, part), { recursive: true, filter: skip });
    }
    for (const name of overlay) {
      cpSync(join(repoRoot, 'packages', name, 'src'), join(tree, 'packages', name, 'src'), {
        recursive: true,
      });
    }
    const modules = [
      'apps/cli',
      ...readdirSync(join(tree, 'packages')).map((n) => `packages/${n}`),
    ];
    for (const folder of modules) {
      const from = join(repoRoot, folder, 'node_modules');
      if (existsSync(from))
        cpSync(from, join(tree, folder, 'node_modules'), {
          recursive: true,
          verbatimSymlinks: true,
          filter: (path) => !/\/\.vite(-temp)?$/.test(path),
        });
    }
    symlinkSync(join(repoRoot, 'node_modules'), join(tree, 'node_modules'));
    const app = join(tree, 'apps', 'cli');
    // Declarations are not what a bench measures (and take longer than the bundles).
    writeFileSync(
      join(app, 'tsup.bench.config.ts'),
      "import config from './tsup.config.ts';\nexport default { ...config, dts: false };\n",
    );
    execFileSync(
      join(repoRoot, 'node_modules', '.bin', 'tsup'),
      ['--config', 'tsup.bench.config.ts', '--silent'],
      {
        cwd: app,
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    // The package's `bin`: dist/bin.cjs since the executable became CommonJS, dist/bin.js before.
    bin = ['bin.cjs', 'bin.js']
      .map((name) => join(app, 'dist', name))
      .find((file) => existsSync(file));
  }
  return { dir, cliBin: bin, lib: (name) => join(dir, 'lib', name, 'index.js') };
}
