import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { Parser } from 'yaml';
import { MANIFEST_MAX_NESTING, measureCst, yamlNestingEstimate } from '../src/nesting.js';

/** The nesting the `yaml` library builds, from its own (iterative) CST parser. */
function libraryDepth(text: string): number {
  return measureCst([...new Parser().parse(text)], {
    depth: Number.MAX_SAFE_INTEGER,
    entries: Number.MAX_SAFE_INTEGER,
    total: Number.MAX_SAFE_INTEGER,
  }).depth;
}

type Tree = string | { map: [string, Tree][] } | { seq: Tree[] };
const tree: fc.Arbitrary<Tree> = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'large', withCrossShrink: true },
    fc.constantFrom('a', '"q [ {"', "'it''s'", '1', 'x # y'),
    fc.record({
      map: fc.array(fc.tuple(fc.constantFrom('k', 'key', '"k"', 'a-b'), tie('tree')), {
        minLength: 1,
        maxLength: 3,
      }),
    }),
    fc.record({ seq: fc.array(tie('tree'), { minLength: 1, maxLength: 3 }) }),
  ),
})).tree;

/** Renders a tree as YAML, choosing block, compact or flow style at random for each node. */
function render(node: Tree, indent: number, flow: boolean, styles: () => number): string {
  if (typeof node === 'string') return node;
  const pad = ' '.repeat(indent);
  if (flow || styles() % 3 === 0) {
    if ('map' in node) {
      const seen = new Set<string>();
      const entries = node.map.filter(([k]) => !seen.has(k) && seen.add(k));
      return `{${entries.map(([k, v]) => `${k}: ${render(v, 0, true, styles)}`).join(', ')}}`;
    }
    return `[${node.seq.map((v) => render(v, 0, true, styles)).join(', ')}]`;
  }
  if ('map' in node) {
    const seen = new Set<string>();
    return node.map
      .filter(([k]) => !seen.has(k) && seen.add(k))
      .map(([k, v]) =>
        typeof v === 'string' || styles() % 2 === 0
          ? `${k}: ${render(v, indent + 2, true, styles)}`
          : `${k}:\n${pad}  ${render(v, indent + 2, false, styles)}`,
      )
      .join(`\n${pad}`);
  }
  return node.seq.map((v) => `- ${render(v, indent + 2, false, styles)}`).join(`\n${pad}`);
}

describe('yamlNestingEstimate', () => {
  test('never estimates below the nesting of YAML in any style (differential, fast-check)', () => {
    fc.assert(
      fc.property(tree, fc.array(fc.nat(), { minLength: 1 }), (node, picks) => {
        let i = 0;
        const text = render(node, 0, false, () => picks[i++ % picks.length]!);
        expect(yamlNestingEstimate(text, Number.MAX_SAFE_INTEGER)).toBeGreaterThanOrEqual(
          libraryDepth(text),
        );
      }),
      { numRuns: Number(process.env['NESTING_RUNS'] ?? 1000) },
    );
  });

  test('a flow collection whose closer a comment hides still counts what the next lines nest (found by the property above)', () => {
    const text = 'k: {k: x # y}\nkey:\n  - a\n  - - - - k: a\n    - a\n  - a';
    expect(yamlNestingEstimate(text, Number.MAX_SAFE_INTEGER)).toBeGreaterThanOrEqual(
      libraryDepth(text),
    );
  });

  test('counts deep nesting in every style', () => {
    const styles: [string, (depth: number) => string][] = [
      ['JSON objects', (d) => `${'{"a":'.repeat(d)}1${'}'.repeat(d)}`],
      ['flow sequences', (d) => `${'['.repeat(d)}${']'.repeat(d)}`],
      ['compact block sequences', (d) => `${'- '.repeat(d)}x`],
      ['explicit keys', (d) => `${'? '.repeat(d)}x`],
      [
        'indented mappings',
        (d) => Array.from({ length: d }, (_, i) => `${' '.repeat(i)}k${i}:`).join('\n'),
      ],
      ['a flow inside a block value', (d) => `spec:\n  x: ${'['.repeat(d)}${']'.repeat(d)}`],
      ['quoted keys', (d) => `${'{"k": '.repeat(d)}"v"${'}'.repeat(d)}`],
    ];
    for (const [name, make] of styles) {
      const text = make(200);
      expect(libraryDepth(text), name).toBeGreaterThanOrEqual(100);
      expect(yamlNestingEstimate(text), name).toBeGreaterThan(MANIFEST_MAX_NESTING);
    }
  });

  test('is not fooled by brackets inside scalars, comments and block scalars', () => {
    const text = [
      'metadata:',
      '  description: "[[[[ {{{{ not structure"',
      "  other: 'it''s [[[['",
      '  # [[[[[[[[[[[[',
      '  notes: |',
      '    [[[[[[[[[[[[',
      '      - - - - - - - - - -',
      '  plain: a [[[[ b',
    ].join('\n');
    expect(yamlNestingEstimate(text)).toBeLessThan(10);
  });

  test('stops early on huge inputs and stays linear', () => {
    const text = '['.repeat(200_000);
    const started = performance.now();
    expect(yamlNestingEstimate(text)).toBeGreaterThan(MANIFEST_MAX_NESTING);
    expect(yamlNestingEstimate(text)).toBeLessThanOrEqual(MANIFEST_MAX_NESTING + 2);
    expect(yamlNestingEstimate('a: b\n'.repeat(50_000))).toBe(2);
    expect(yamlNestingEstimate(`${'['.repeat(20)}${']'.repeat(20)}\n`.repeat(10_000))).toBe(42);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});
