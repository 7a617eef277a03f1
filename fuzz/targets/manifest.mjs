// The agent.yaml loader (issue 16, findings 1 and 7): arbitrary bytes, deep nesting in every
// YAML style, YAML-ish token soup and mutations of a real store manifest, read from a real file
// by the built @packwarden/pack-manifest. Promises checked (packages/pack-manifest/README.md
// "The manifest", "Errors"):
// - loadPackManifest returns a manifest or throws a PackManifestError with a documented code,
//   nothing else (no RangeError from a stack overflow, no crash);
// - bounded time per load, also for deep and for wide (thousands of entries) input;
// - no process warning (a collection key used to be stringified with a warning on stderr);
// - nothing written: the pack folder still holds agent.yaml only.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadPackManifest, PackManifestError } from '../../packages/pack-manifest/dist/index.js';

const TIME_BOUND_MS = 1000;
const CODES = new Set([
  'ERR_MANIFEST_TOO_LARGE',
  'ERR_MANIFEST_YAML',
  'ERR_MANIFEST_TOO_DEEP',
  'ERR_MANIFEST_TOO_MANY_ENTRIES',
  'ERR_MANIFEST_INVALID',
]);

const REAL = readFileSync(
  new URL(
    '../../packages/pack-manifest/test/fixtures/agenthippo/joker1/agent.yaml',
    import.meta.url,
  ),
  'utf8',
);

const dir = mkdtempSync(join(tmpdir(), 'fuzz-manifest-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
let warnings = 0;
process.on('warning', () => {
  warnings += 1;
});
try {
  writeFileSync(join(dir, 'agent.yaml'), REAL);
  loadPackManifest(dir); // warm up: the first load compiles the schema
} catch {
  // the check below reports it
}

const FRAGMENTS = [
  '[',
  ']',
  '{',
  '}',
  ',',
  '- ',
  '? ',
  ': ',
  ':',
  '"',
  "'",
  '\\',
  '#',
  ' #',
  '\n',
  '\r\n',
  '\r',
  ' ',
  '  ',
  '\t',
  '|',
  '|2',
  '>-',
  '&a ',
  '*a',
  '!t ',
  '!!str ',
  '---\n',
  '...\n',
  '\n  - ',
  'a',
  'key',
  '\u202e',
  '\u0000',
  '\ufeff',
  '<<: ',
  '!!js/function ',
  '%YAML 1.2\n',
];

const DEEP = {
  json: (d) => `${'{"a":'.repeat(d)}1${'}'.repeat(d)}`,
  flowSeq: (d) => `${'['.repeat(d)}${']'.repeat(d)}`,
  flowPairs: (d) => `${'[a: '.repeat(d)}b${']'.repeat(d)}`,
  compact: (d) => `${'- '.repeat(d)}x`,
  explicitKeys: (d) => `${'? '.repeat(d)}x`,
  // Capped: 700 lines already make 250 KB, just under the 256 KiB limit.
  indented: (d) =>
    Array.from({ length: Math.min(d, 700) }, (_, i) => `${' '.repeat(i)}k${i}:`).join('\n'),
  unclosed: (d) => '['.repeat(d),
  inSpec: (d) => `${REAL}  deep: ${'['.repeat(d)}${']'.repeat(d)}\n`,
};

const WIDE = {
  blockMap: (n) =>
    `${REAL}  wide:\n${Array.from({ length: n }, (_, i) => `    k${i}: v`).join('\n')}\n`,
  flowMap: (n) =>
    `${REAL}  wide: {${Array.from({ length: n }, (_, i) => `k${i}: 1`).join(', ')}}\n`,
  flowList: (n) => `${REAL}  wide: [${'a, '.repeat(n)}a]\n`,
  manyLists: (n) =>
    `${REAL}${Array.from({ length: Math.ceil(n / 100) }, (_, i) => `  l${i}: [${'1, '.repeat(99)}1]`).join('\n')}\n`,
};

export const target = {
  name: 'manifest',
  arbitrary: (fc) =>
    fc.oneof(
      fc.uint8Array({ maxLength: 2048 }).map((bytes) => ({ bytes })),
      fc
        .record({
          style: fc.constantFrom(...Object.keys(DEEP)),
          depth: fc.oneof(fc.integer({ min: 1, max: 80 }), fc.integer({ min: 80, max: 20_000 })),
        })
        .map(({ style, depth }) => ({ text: DEEP[style](depth) })),
      fc
        .record({
          style: fc.constantFrom(...Object.keys(WIDE)),
          entries: fc.integer({ min: 900, max: 4000 }),
        })
        .map(({ style, entries }) => ({ text: WIDE[style](entries) })),
      fc
        .array(fc.constantFrom(...FRAGMENTS), { maxLength: 200 })
        .map((parts) => ({ text: parts.join('') })),
      fc
        .array(
          fc.record({
            at: fc.nat(),
            insert: fc.oneof(fc.constantFrom(...FRAGMENTS), fc.string({ maxLength: 6 })),
            remove: fc.nat({ max: 6 }),
          }),
          { maxLength: 6 },
        )
        .map((edits) => {
          let text = REAL;
          for (const { at, insert, remove } of edits) {
            const i = at % (text.length + 1);
            text = text.slice(0, i) + insert + text.slice(i + remove);
          }
          return { text };
        }),
    ),
  check(input) {
    const file = join(dir, 'agent.yaml');
    writeFileSync(file, input.bytes ?? input.text);
    const before = warnings;
    const started = performance.now();
    try {
      loadPackManifest(dir);
    } catch (error) {
      if (!(error instanceof PackManifestError) || !CODES.has(error.code)) {
        throw new Error(
          `untyped or undocumented error: ${error?.code ?? ''} ${error?.stack ?? error}`,
          { cause: error },
        );
      }
    }
    const elapsed = performance.now() - started;
    if (elapsed > TIME_BOUND_MS) throw new Error(`load took ${Math.round(elapsed)} ms`);
    if (warnings !== before) throw new Error('the load emitted a process warning');
    const left = readdirSync(dir);
    if (left.length !== 1 || left[0] !== 'agent.yaml') {
      throw new Error(`the pack folder now holds ${JSON.stringify(left)}`);
    }
  },
};
