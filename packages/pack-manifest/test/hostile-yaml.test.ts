import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, test } from 'vitest';
import {
  loadPackManifest,
  MANIFEST_MAX_COLLECTION_ENTRIES,
  MANIFEST_MAX_NESTING,
  PackManifestError,
  parsePackManifest,
} from '@packwarden/pack-manifest';
import { yamlish } from './yamlish.js';

const builtEntry = new URL('../dist/index.js', import.meta.url).href;
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** The issue 16 input: 2 KB of JSON-style YAML nested 1,000 levels deep. */
const DEEP_1000 = `${'{"a":'.repeat(1000)}1${'}'.repeat(1000)}`;

const HEAD = 'apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: a, version: 0.0.1}\n';

/**
 * Runs `script` in a fresh Node process against the built package (`pm` is its namespace) with
 * the inputs as `inputs`, and returns what the process did.
 */
function inChild(script: string, inputs: string[]) {
  const dir = mkdtempSync(join(tmpdir(), 'pw-yaml-child-'));
  dirs.push(dir);
  const file = join(dir, 'inputs.json');
  writeFileSync(file, JSON.stringify(inputs));
  const child = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `const pm = await import(${JSON.stringify(builtEntry)});
       const fs = await import('node:fs');
       const inputs = JSON.parse(fs.readFileSync(${JSON.stringify(file)}, 'utf8'));
       ${script}`,
    ],
    { encoding: 'utf8', timeout: 60_000 },
  );
  return { status: child.status, signal: child.signal, stdout: child.stdout, stderr: child.stderr };
}

describe('deep YAML never reaches the YAML library (issue 16, finding 1)', () => {
  test('the 1,000-deep manifest parsed 50 times in one process: exit 0, a typed error each time', () => {
    const result = inChild(
      `const codes = [];
       for (let i = 0; i < 50; i++) {
         try { pm.parsePackManifest(inputs[0]); codes.push('accepted'); }
         catch (error) { codes.push(error instanceof pm.PackManifestError ? error.code : 'untyped:' + error); }
       }
       process.stdout.write(JSON.stringify(codes));`,
      [DEEP_1000],
    );
    expect(result.signal).toBeNull();
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(Array(50).fill('ERR_MANIFEST_TOO_DEEP'));
  });

  test('every deep style is refused with ERR_MANIFEST_TOO_DEEP, loaded from a real file', () => {
    const deep = 200;
    for (const body of [
      DEEP_1000,
      `${HEAD}spec:\n  x: ${'['.repeat(deep)}${']'.repeat(deep)}\n`,
      `${HEAD}spec:\n  x:\n    ${'- '.repeat(deep)}x\n`,
      `${HEAD}spec:\n  x: ${'[a: '.repeat(deep)}b${']'.repeat(deep)}\n`,
      `${HEAD}${Array.from({ length: deep }, (_, i) => `${' '.repeat(i)}k${i}:`).join('\n')}\n`,
    ]) {
      const dir = mkdtempSync(join(tmpdir(), 'pw-deep-'));
      dirs.push(dir);
      writeFileSync(join(dir, 'agent.yaml'), body);
      let error: unknown;
      try {
        loadPackManifest(dir);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(PackManifestError);
      expect((error as PackManifestError).code).toBe('ERR_MANIFEST_TOO_DEEP');
      // Reading is all the loader does: nothing appears in the pack folder.
      expect(readdirSync(dir)).toEqual(['agent.yaml']);
    }
  });

  test('nesting up to the documented limit still loads', () => {
    // Block structure counts two per indentation step (see README), flow brackets two each.
    const depth = Math.floor(MANIFEST_MAX_NESTING / 2) - 4;
    const manifest = parsePackManifest(
      `${HEAD}spec:\n  custom: ${'['.repeat(depth)}1${']'.repeat(depth)}\n`,
    );
    let value: unknown = (manifest.spec as { custom: unknown }).custom;
    let levels = 0;
    while (Array.isArray(value)) {
      value = value[0];
      levels += 1;
    }
    expect(levels).toBe(depth);
  });
});

describe('wide YAML is refused before the library composes it', () => {
  // Composing checks each key against every earlier one: 20,000 keys took 17 s, 25,000 flow
  // keys 28 s, before these bounds.
  const cases: [string, string][] = [
    [
      '20,000 keys in one mapping',
      `${HEAD}spec:\n${Array.from({ length: 20_000 }, (_, i) => `  k${i}: v`).join('\n')}\n`,
    ],
    [
      '24,000 keys in one flow mapping',
      `${HEAD}spec: {${Array.from({ length: 24_000 }, (_, i) => `k${i}: 1`).join(', ')}}\n`,
    ],
    ['80,000 items in one flow list', `${HEAD}spec: {x: [${'a, '.repeat(80_000)}a]}\n`],
    [
      '12 lists of 1,000 items',
      `${HEAD}spec:\n${Array.from({ length: 12 }, (_, m) => `  l${m}: [${'1, '.repeat(999)}1]`).join('\n')}\n`,
    ],
  ];

  test.each(cases)('%s: ERR_MANIFEST_TOO_MANY_ENTRIES, in bounded time', (_name, text) => {
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(256 * 1024);
    const started = performance.now();
    let error: unknown;
    try {
      parsePackManifest(text);
    } catch (caught) {
      error = caught;
    }
    expect((error as PackManifestError).code).toBe('ERR_MANIFEST_TOO_MANY_ENTRIES');
    // Generous for a loaded 2-core machine; it took 17 to 28 s before.
    expect(performance.now() - started).toBeLessThan(5000);
  });

  test('the bounds leave room: 1,000 skills load', () => {
    const skills = Array.from(
      { length: MANIFEST_MAX_COLLECTION_ENTRIES },
      (_, i) => `    - ./s${i}`,
    );
    const manifest = parsePackManifest(`${HEAD}spec:\n  skills:\n${skills.join('\n')}\n`);
    expect(manifest.spec.skills).toHaveLength(1000);
  });

  test('parsePackManifest bounds its text too (ERR_MANIFEST_TOO_LARGE)', () => {
    const text = `${HEAD}spec: {x: "${'a'.repeat(300 * 1024)}"}\n`;
    expect(() => parsePackManifest(text)).toThrow(
      expect.objectContaining({ code: 'ERR_MANIFEST_TOO_LARGE' }),
    );
    expect(parsePackManifest(`${HEAD}`, { maxBytes: 200 }).metadata.name).toBe('a');
  });
});

describe('collection keys (issue 16, finding 7)', () => {
  const cases: [string, string][] = [
    ['a flow sequence as a key', `${HEAD}? [a]\n: c\n`],
    ['a flow mapping as a key', `${HEAD}spec: {{a: b}: c}\n`],
    ['a block mapping as an explicit key', `${HEAD}spec:\n  ? x: y\n  : c\n`],
    ['an alias as a key', `${HEAD}spec:\n  a: &k v\n  *k : c\n`],
    ['a duplicate hidden by a collection key', `${HEAD}spec:\n  ? [a]\n  : 1\n  "[a]": 2\n`],
    ['1 and "1"', `${HEAD}spec: {labels: {1: a, "1": b}}\n`],
    ['null and ""', `${HEAD}spec: {labels: {~: a, "": b}}\n`],
  ];

  test.each(cases)('%s is refused with ERR_MANIFEST_YAML', (_name, text) => {
    let error: unknown;
    try {
      parsePackManifest(text);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(PackManifestError);
    expect((error as PackManifestError).code).toBe('ERR_MANIFEST_YAML');
    expect((error as PackManifestError).issues[0]?.line).toBeGreaterThan(0);
  });

  test('refusing them prints nothing: no process warning on stderr', () => {
    const result = inChild(
      `const codes = inputs.map((text) => {
         try { pm.parsePackManifest(text); return 'accepted'; }
         catch (error) { return error.code; }
       });
       process.stdout.write(JSON.stringify(codes));`,
      cases.map(([, text]) => text),
    );
    expect(result.status).toBe(0);
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout)).toEqual(cases.map(() => 'ERR_MANIFEST_YAML'));
  });
});

describe('any YAML-ish text (property)', () => {
  test('parsePackManifest returns a manifest or throws a PackManifestError, quickly', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          yamlish,
          yamlish.map((tail) => `${HEAD}spec:\n  x: ${tail}`),
          fc.string({ unit: 'binary', maxLength: 300 }),
        ),
        (text) => {
          const started = performance.now();
          try {
            parsePackManifest(text);
          } catch (error) {
            expect(error).toBeInstanceOf(PackManifestError);
          }
          expect(performance.now() - started).toBeLessThan(1000);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('YAML that is not plain JSON data, or means two things (review: non-core tags, merge keys, cycles)', () => {
  const AUTHOR_CYCLE = HEAD.replace(
    'metadata: {name: a, version: 0.0.1}',
    'metadata: &m {name: a, version: 0.0.1, author: {name: x, me: *m}}',
  );
  const cases: [string, string, RegExp][] = [
    // `pack info --json` printed `author`: JSON.stringify threw on the cycle, an untyped crash.
    ['an alias inside its own anchor (author)', AUTHOR_CYCLE, /contains it/],
    ['an alias inside its own anchor (spec)', `${HEAD}spec:\n  x: &a [*a]\n`, /contains it/],
    // The library resolves YAML 1.1 tags written out even under the core schema.
    [
      '!!merge, which adds spec.engine',
      `${HEAD}spec:\n  b: &b {engine: evil}\n  !!merge <<: *b\n`,
      /!!merge/,
    ],
    ['a plain << key', `${HEAD}spec:\n  b: &b {engine: evil}\n  <<: *b\n`, /"<<"/],
    ['!!binary (a Buffer)', `${HEAD}spec:\n  x: !!binary aGVsbG8=\n`, /!!binary/],
    ['!!set (a Set: {} in JSON)', `${HEAD}spec:\n  x: !!set {a, b}\n`, /!!set/],
    ['!!omap (a Map: {} in JSON)', `${HEAD}spec:\n  x: !!omap [a: 1]\n`, /!!omap/],
    ['!!timestamp (a Date)', `${HEAD}spec:\n  x: !!timestamp 2001-12-14\n`, /!!timestamp/],
    [
      'a verbatim !!binary tag',
      `${HEAD}spec:\n  x: !<tag:yaml.org,2002:binary> aGVsbG8=\n`,
      /!!binary/,
    ],
    ['.nan (null in JSON)', `${HEAD}spec:\n  x: .nan\n`, /JSON number/],
    // A document that declares YAML 1.1 was read as YAML 1.2 anyway: "off" and 777 here, false
    // and 511 to every reader that honours the directive (or reads YAML 1.1 by default).
    [
      'a %YAML 1.1 directive, read as YAML 1.2',
      `%YAML 1.1\n---\n${HEAD}spec:\n  sandbox: off\n  mode: 0777\n  name: 0b1\n`,
      /%YAML 1\.1/,
    ],
  ];

  test.each(cases)(
    '%s: ERR_MANIFEST_YAML from a real file, nothing written',
    (_name, body, message) => {
      const dir = mkdtempSync(join(tmpdir(), 'pw-plain-'));
      dirs.push(dir);
      writeFileSync(join(dir, 'agent.yaml'), body);
      let error: unknown;
      try {
        loadPackManifest(dir);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(PackManifestError);
      expect((error as PackManifestError).code).toBe('ERR_MANIFEST_YAML');
      expect((error as PackManifestError).message).toMatch(message);
      expect(readdirSync(dir)).toEqual(['agent.yaml']);
    },
  );

  test('a %YAML 1.2 directive, the version packwarden reads, still loads', () => {
    const manifest = parsePackManifest(`%YAML 1.2\n---\n${HEAD}spec:\n  sandbox: off\n`);
    expect(manifest.spec).toEqual({ sandbox: 'off' });
  });

  test('core tags, shared aliases and a quoted "<" key still load, and stringify', () => {
    const manifest = parsePackManifest(
      `${HEAD}spec:\n  engine: !!str claude\n  n: !!int "12"\n  list: &l [1, 2]\n  again: *l\n  twice: *l\n  labels: {"<": x}\n`,
    );
    expect(JSON.parse(JSON.stringify(manifest.spec))).toEqual({
      engine: 'claude',
      n: 12,
      list: [1, 2],
      again: [1, 2],
      twice: [1, 2],
      labels: { '<': 'x' },
    });
  });
});
