import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PACK_MANIFEST_ENV_VARIABLES } from '@packwarden/pack-manifest';
import { SANDBOX_ENV_VARIABLES } from '@packwarden/sandbox';
import { STORE_CLIENT_ENV_VARIABLES } from '@packwarden/store-client';
import { TRUST_ROOT_ENV, TRUST_ROOT_ENV_VARIABLES } from '@packwarden/trust-root';
import { describe, expect, test } from 'vitest';
import { cli, repoRoot } from './helpers.js';

/** Every `.ts` file under `dir`, tests excluded. */
function sources(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))
    .map((file) => join(dir, file));
}

/**
 * The `PACKWARDEN_*` variables a source file reads: through pack-manifest's lookups with a literal
 * name or through `packwardenHome`, or straight from an environment object.
 */
function readsIn(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const names: string[] = [];
  for (const match of text.matchAll(
    /\b(?:lookupPackwardenEnv|readPackwardenEnv|readPackwardenFlag)\(\s*[\w.]+,\s*'([A-Z0-9_]+)'/g,
  ))
    names.push(`PACKWARDEN_${match[1]}`);
  if (/\bpackwardenHome\(/.test(text)) names.push('PACKWARDEN_HOME');
  for (const match of text.matchAll(/\benv(?:\.|\[\s*')(PACKWARDEN_[A-Z0-9_]+)/g))
    names.push(match[1]!);
  return names;
}

const LIBRARIES = {
  'pack-manifest': PACK_MANIFEST_ENV_VARIABLES,
  'trust-root': TRUST_ROOT_ENV_VARIABLES,
  'store-client': STORE_CLIENT_ENV_VARIABLES,
  sandbox: SANDBOX_ENV_VARIABLES,
} as const;

describe('packwarden env lists what the code reads (issue 13)', () => {
  test("each library's exported list holds every variable the library reads", () => {
    let found = 0;
    for (const [name, list] of Object.entries(LIBRARIES)) {
      const listed = new Set(list.map((variable) => variable.name));
      for (const file of sources(join(repoRoot, 'packages', name, 'src')))
        for (const variable of readsIn(file)) {
          found += 1;
          expect(listed, `${relative(repoRoot, file)} reads ${variable}`).toContain(variable);
        }
    }
    // The trust root reads through its own `TRUST_ROOT_ENV` names.
    const trustListed = TRUST_ROOT_ENV_VARIABLES.map((variable) => variable.name);
    for (const variable of Object.values(TRUST_ROOT_ENV)) expect(trustListed).toContain(variable);
    // The scan sees reads at all (a broken pattern would pass vacuously).
    expect(found).toBeGreaterThanOrEqual(5);
  });

  test('every variable a library or the CLI reads appears in `packwarden env --json` and its text', async () => {
    const read = new Set<string>(Object.values(TRUST_ROOT_ENV));
    const roots = [
      ...readdirSync(join(repoRoot, 'packages')).map((name) =>
        join(repoRoot, 'packages', name, 'src'),
      ),
      join(repoRoot, 'apps', 'cli', 'src'),
    ];
    for (const root of roots)
      for (const file of sources(root)) for (const v of readsIn(file)) read.add(v);
    expect(read).toContain('PACKWARDEN_ISOLATION');
    expect(read).toContain('PACKWARDEN_MODEL_TOKEN');
    expect(read).toContain('PACKWARDEN_STORE_URL');

    const json = await cli(['env', '--json'], { env: {} });
    expect(json.code).toBe(0);
    const rows = (JSON.parse(json.stdout) as { variables: Array<{ name: string; alias: string }> })
      .variables;
    const names = rows.map((row) => row.name);
    expect(new Set(names).size).toBe(names.length);
    for (const variable of read) expect(names).toContain(variable);
    for (const row of rows) expect(row.alias).toBe(row.name.replace(/^PACKWARDEN_/, 'AGENTHIPPO_'));

    const text = await cli(['env'], { env: {} });
    for (const variable of read)
      expect(text.stdout).toMatch(new RegExp(`^${variable} +unset$`, 'm'));
  });
});
