import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Tests run the TypeScript sources in-process, but the installers they SIGKILL or race are plain
// Node processes: build dist/ once per run so those children run the current code. The
// workspace packages it imports must have their dist/ too.
export function setup(): void {
  const packageRoot = fileURLToPath(new URL('..', import.meta.url));
  const tsup = join(packageRoot, '..', '..', 'node_modules', '.bin', 'tsup');
  for (const dependency of ['pack-digest', 'pack-manifest', 'pack-signature']) {
    const dir = join(packageRoot, '..', dependency);
    if (!existsSync(join(dir, 'dist', 'index.js')))
      execFileSync(tsup, ['--silent'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  execFileSync(tsup, ['--silent'], { cwd: packageRoot, stdio: ['ignore', 'ignore', 'inherit'] });
}
