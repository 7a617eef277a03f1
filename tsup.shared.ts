import { defineConfig, type Options } from 'tsup';

/**
 * The build every library package shares: ESM only, Node 20, declarations and source maps,
 * `node:` specifiers kept. Dependencies stay external (they are the package's own).
 */
export function libraryConfig(entry: Options['entry'] = ['src/index.ts'], overrides: Options = {}) {
  return defineConfig({
    entry,
    format: ['esm'],
    target: 'node20',
    platform: 'node',
    dts: true,
    sourcemap: true,
    clean: true,
    removeNodeProtocol: false,
    ...overrides,
  });
}
