import { buildIfStale } from '../../../scripts/build-if-stale.js';

/**
 * A few cache tests run a second process, the way another packwarden (or code in a sandbox)
 * would write the cache folder: build dist/ of this package and of pack-manifest, which it
 * imports, unless they are newer than every source.
 */
export function setup(): void {
  buildIfStale(new URL('../../pack-manifest/', import.meta.url).pathname);
  buildIfStale(new URL('../', import.meta.url).pathname);
}
