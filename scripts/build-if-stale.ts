import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Tests run TypeScript sources in-process, but the child processes some of them start (hosts,
 * installers, the CLI binary) run built code. This builds a package with tsup unless `output`
 * is newer than every file under `sources` (default: the package's own `src/`), so a child never
 * runs code older than the sources under test.
 */
export function buildIfStale(
  packageDir: string,
  options: { output?: string; sources?: readonly string[] } = {},
): void {
  const output = join(packageDir, options.output ?? join('dist', 'index.js'));
  const sources = (options.sources ?? [join(packageDir, 'src')]).filter((dir) => existsSync(dir));
  if (existsSync(output) && statSync(output).mtimeMs > Math.max(0, ...sources.map(newestMtime))) {
    return;
  }
  execFileSync(join(repoRoot, 'node_modules', '.bin', 'tsup'), ['--silent'], {
    cwd: packageDir,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** Every workspace package's `src/`: what the CLI bundle is made from. */
export function allPackageSources(): string[] {
  return readdirSync(join(repoRoot, 'packages')).map((name) =>
    join(repoRoot, 'packages', name, 'src'),
  );
}
