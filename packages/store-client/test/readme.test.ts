import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as api from '../src/index.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README', () => {
  it('shows the JSON Schema the package ships', () => {
    const start = readme.indexOf('The JSON Schema (draft 2020-12)');
    const block = /```json\n([\s\S]*?)\n```/.exec(readme.slice(start))![1]!;
    expect(JSON.parse(block)).toEqual(api.staticStoreIndexJsonSchema());
  });

  it('documents every export and every error code', () => {
    for (const name of Object.keys(api)) expect(readme, name).toContain(name);
    const source = readFileSync(new URL('../src/errors.ts', import.meta.url), 'utf8');
    const codes = [...source.matchAll(/'(ERR_[A-Z_]+)'/g)].map((m) => m[1]!);
    expect(codes.length).toBeGreaterThan(40);
    for (const code of codes) expect(readme, code).toContain(code);
  });
});
