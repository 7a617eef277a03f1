import { buildIfStale } from '../../../scripts/build-if-stale.js';

/**
 * The hostile-YAML tests run the parser many times in one child process, the way a service
 * would: build dist/ unless it is newer than every source.
 */
export function setup(): void {
  buildIfStale(new URL('../', import.meta.url).pathname);
}
