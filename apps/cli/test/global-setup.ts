import { join } from 'node:path';
import { allPackageSources, buildIfStale } from '../../../scripts/build-if-stale.js';

const cliRoot = new URL('../', import.meta.url).pathname;

/**
 * A few tests run the built binary the way users do. Build it (from sources: tsup bundles the
 * workspace libraries) unless dist/bin.cjs is newer than every source it is made from.
 */
export function setup(): void {
  buildIfStale(cliRoot, {
    output: join('dist', 'bin.cjs'),
    sources: [join(cliRoot, 'src'), ...allPackageSources()],
  });
}
