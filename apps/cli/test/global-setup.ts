import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const cliRoot = new URL('../', import.meta.url).pathname;
const repoRoot = join(cliRoot, '..', '..');

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * A few tests run the built binary the way users do. Build it (from sources: tsup bundles the
 * workspace libraries) unless dist/bin.js is newer than every source it is made from.
 */
export function setup(): void {
  const bin = join(cliRoot, 'dist', 'bin.js');
  const sources = [
    join(cliRoot, 'src'),
    ...readdirSync(join(repoRoot, 'packages')).map((name) =>
      join(repoRoot, 'packages', name, 'src'),
    ),
  ];
  const newest = Math.max(...sources.filter((dir) => existsSync(dir)).map(newestSource));
  if (existsSync(bin) && statSync(bin).mtimeMs > newest) return;
  execFileSync(join(repoRoot, 'node_modules', '.bin', 'tsup'), { cwd: cliRoot, stdio: 'inherit' });
}
