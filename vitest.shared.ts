import { defineConfig } from 'vitest/config';

// Workspace packages resolve to their TypeScript sources in tests (no build before test):
// every package's exports["."] starts with the "@packwarden/source" condition.
export const sharedConfig = defineConfig({
  ssr: {
    resolve: {
      conditions: ['@packwarden/source', 'module', 'node', 'development|production'],
    },
  },
  resolve: {
    conditions: ['@packwarden/source', 'module', 'node', 'development|production'],
  },
  test: {
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
