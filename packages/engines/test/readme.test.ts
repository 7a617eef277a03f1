import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import * as engines from '../src/index.js';

test('the README names every export and every error code', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  for (const name of Object.keys(engines)) expect(readme).toContain(`\`${name}`);
  const errors = readFileSync(new URL('../src/errors.ts', import.meta.url), 'utf8');
  const codes = [...errors.matchAll(/'(ERR_[A-Z_]+)'/g)].map((match) => match[1]);
  expect(codes.length).toBeGreaterThan(5);
  for (const code of codes) expect(readme).toContain(`\`${code}\``);
});
