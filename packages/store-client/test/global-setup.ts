import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildIfStale } from '../../../scripts/build-if-stale.js';

// Tests run the TypeScript sources in-process, but the installers they SIGKILL or race are plain
// Node processes: they run dist/, which must not be older than the sources, and so must the
// dist/ of the workspace packages it imports.
export function setup(): void {
  const packageRoot = fileURLToPath(new URL('..', import.meta.url));
  for (const dependency of ['pack-digest', 'pack-manifest', 'pack-signature']) {
    buildIfStale(join(packageRoot, '..', dependency));
  }
  buildIfStale(packageRoot);
}
