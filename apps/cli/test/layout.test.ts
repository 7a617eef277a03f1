import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';

const SRC = fileURLToPath(new URL('../src', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

// Every way a module names another: `import … from`, `import type … from`, `export … from`,
// `import('…')` and bare `import '…'`. Type-only imports count too: a cycle of types is still a
// cycle a reader has to untangle.
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g;

function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(SPECIFIER)].map((match) => match[1]!);
}

/** The graph of relative imports inside src, keyed by path relative to src. */
function graph(): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const local = imports(file)
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => relative(SRC, resolve(dirname(file), specifier.replace(/\.js$/, '.ts'))));
    edges.set(relative(SRC, file), local);
  }
  return edges;
}

/** Every cycle reachable in `edges`, each as the list of modules around it. */
function cycles(edges: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of edges.get(node) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of [...edges.keys()].sort()) if (!state.has(node)) visit(node);
  return found;
}

/** Everything `start` reaches through relative imports, static or dynamic. */
function closure(edges: Map<string, string[]>, start: string): Set<string> {
  const seen = new Set<string>([start]);
  const queue = [start];
  while (queue.length > 0)
    for (const next of edges.get(queue.pop()!) ?? [])
      if (!seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
  return seen;
}

describe('apps/cli/src layout', () => {
  test('the cycle finder finds a planted cycle (the check can fail)', () => {
    const planted = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(cycles(planted)).toEqual([['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
  });

  test('no module imports itself back, through any chain, static, dynamic or type-only', () => {
    const edges = graph();
    expect(edges.size).toBeGreaterThan(20);
    // Every relative import names a file that exists: a typo would hide an edge.
    for (const [file, targets] of edges)
      for (const target of targets) expect(edges.has(target), `${file} → ${target}`).toBe(true);
    expect(cycles(edges)).toEqual([]);
  });

  test('one folder per command group; commands never import program.ts', () => {
    const edges = graph();
    for (const [file, targets] of edges) {
      if (!file.startsWith('commands/')) continue;
      expect(file.split('/').length, `${file} is not inside a command group folder`).toBe(3);
      expect(targets, file).not.toContain('program.ts');
    }
  });

  test('store list / search / info reach no trust-root or signature code of the CLI', () => {
    const edges = graph();
    const reached = closure(edges, 'commands/store/browse.ts');
    expect([...reached].filter((file) => file.startsWith('shared/trust'))).toEqual([]);
    for (const file of reached) {
      const named = imports(join(SRC, file)).filter((specifier) => specifier.startsWith('@'));
      expect(named, file).not.toContain('@packwarden/pack-signature');
      expect(named, file).not.toContain('@packwarden/trust-root');
      // Only the browsing entry of store-client (no jose, verifier or tar code).
      expect(named, file).not.toContain('@packwarden/store-client');
    }
  });
});
