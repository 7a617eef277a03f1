// Shared helpers for the bench/ scripts: building what they run, timing commands, printing.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
export const cliBin = join(repoRoot, 'apps', 'cli', 'dist', 'bin.js');

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
 * command, the median time and the median of its per-round ratio to the first command.
 * `entries`: [{ name, command, args, cwd?, node?, measure?(stdout) → ms }].
 */
export function timeInterleaved(entries, { runs = 5 } = {}) {
  const once = (entry) => {
    const argv = entry.node ? ['--import', RSS_PROBE, ...entry.args] : entry.args;
    const start = process.hrtime.bigint();
    const result = spawnSync(entry.command, argv, {
      cwd: entry.cwd,
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
    ratio: median(samples[i].map((s, round) => s.ms / samples[0][round].ms)),
    rssMiB: Math.max(...samples[i].map((s) => s.rssMiB ?? 0)) || undefined,
  }));
}

export function fmtMs(ms) {
  return `${ms.toFixed(0).padStart(6)} ms`;
}

export function verdict(ratio, target) {
  return ratio <= target ? `ok (target ≤ ${target}×)` : `MISSED (target ≤ ${target}×)`;
}
