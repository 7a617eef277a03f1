import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// Tests run the TypeScript sources in-process, but the hosts they spawn are plain Node
// processes: build dist/ once per test run so that those children run the current code.
export function setup(): void {
  execFileSync('npx', ['tsup', '--silent'], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}
