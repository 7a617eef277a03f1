import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { engineCliFolders } from '../src/sdk-paths.js';

test('engineCliFolders: the SDK and native CLI folders confinement must make readable', () => {
  const claude = engineCliFolders('claude');
  expect(claude).toHaveLength(2);
  expect(existsSync(join(claude[0] ?? '', 'sdk.mjs'))).toBe(true);
  expect(existsSync(join(claude[1] ?? '', 'claude'))).toBe(true);
  const codex = engineCliFolders('codex');
  expect(codex).toHaveLength(3);
  expect(existsSync(join(codex[2] ?? '', 'vendor'))).toBe(true);
  expect(() => engineCliFolders('claude', () => '/nonexistent/sdk.mjs')).toThrow();
});
