import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildIfStale } from '../../../scripts/build-if-stale.js';

/**
 * Tests run the TypeScript sources in-process; test/imports.test.ts imports dist/ in a child
 * Node process, the way a consumer does: build it, and the workspace packages it imports,
 * unless dist/ is newer than every source.
 */
export function setup(): void {
  const packageRoot = fileURLToPath(new URL('..', import.meta.url));
  for (const dependency of ['pack-digest', 'pack-manifest']) {
    buildIfStale(join(packageRoot, '..', dependency));
  }
  buildIfStale(packageRoot);
}
