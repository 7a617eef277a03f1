import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, test } from 'vitest';
import { computePackDigest } from '@packwarden/pack-digest';
import { seededRandom } from '../../../scripts/seeded-random.js';
import { makeTree, removeTree, type TreeFile } from './tree.js';

// The shell recipe exactly as SPEC.md states it (the test reads it from there).
const spec = readFileSync(new URL('../SPEC.md', import.meta.url), 'utf8');
const recipe = /```sh\n([\s\S]*?)```/.exec(spec)![1]!;

function runRecipe(root: string): string {
  const script = recipe.replace('cd PACK', 'cd "$1"');
  return execFileSync('bash', ['-c', script, 'recipe', root], { encoding: 'utf8' }).split(' ')[0]!;
}

const NAME_PARTS = [
  'a',
  'B',
  'z',
  '_',
  '-',
  '.',
  ' ',
  'é',
  'ß',
  '技',
  '😀',
  'ｆ',
  '\ue000',
  '0',
  '~',
  '+',
  '#',
  'x y',
];
const FOLDERS = [
  '',
  '.claude',
  '.claude/hooks',
  '.codex',
  '.agent-hippo',
  'skills/web',
  'node_modules/x',
  '.git/objects',
  'a-b',
  'a',
  'a/b',
];

function randomTree(seed: number): TreeFile[] {
  const next = seededRandom(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
  const files = new Map<string, TreeFile>();
  const count = 5 + Math.floor(next() * 40);
  for (let i = 0; i < count; i++) {
    let name = '';
    const length = 1 + Math.floor(next() * 4);
    for (let j = 0; j < length; j++) name += pick(NAME_PARTS);
    if (name === '.' || name === '..' || name.trim() !== name) name = `n${name}n`;
    const folder = pick(FOLDERS);
    const path = folder === '' ? name : `${folder}/${name}`;
    if (
      [...files.keys()].some(
        (other) => other.startsWith(`${path}/`) || path.startsWith(`${other}/`),
      )
    )
      continue;
    const roll = next();
    if (roll < 0.12)
      files.set(path, {
        path,
        symlink: pick(['AGENTS.md', '../outside', 'missing/target', '/etc/hosts', name]),
      });
    else {
      const size = roll < 0.2 ? 0 : Math.floor(next() * 5000);
      const content = Buffer.alloc(size);
      for (let k = 0; k < size; k++) content[k] = Math.floor(next() * 256);
      files.set(path, { path, content, mode: next() < 0.3 ? 'x' : 'f' });
    }
  }
  // The root pack.sig is the one path left out, whatever it is; a folder of that name is not
  // (its files are content: vector root-pack-sig-folder).
  const rootSignature = next();
  if (rootSignature < 0.3)
    files.set('pack.sig', { path: 'pack.sig', content: 'root signature is excluded\n' });
  else if (rootSignature < 0.45) files.set('pack.sig', { path: 'pack.sig', symlink: 'AGENTS.md' });
  else if (rootSignature < 0.7)
    files.set('pack.sig/inside.txt', {
      path: 'pack.sig/inside.txt',
      content: 'in a root folder named pack.sig: content\n',
    });
  files.set('skills/web/pack.sig', { path: 'skills/web/pack.sig', content: 'nested is content\n' });
  return [...files.values()];
}

const roots: string[] = [];
afterEach(() => roots.splice(0).forEach(removeTree));

describe('the SPEC.md shell recipe agrees with the library', () => {
  test.each(Array.from({ length: 12 }, (_, i) => [1000 + i]))(
    'random tree, seed %i',
    async (seed) => {
      const root = makeTree(randomTree(seed));
      roots.push(root);
      const expected = runRecipe(root);
      expect((await computePackDigest(root, { parallel: 'never' })).digest).toBe(expected);
      expect((await computePackDigest(root, { parallel: 'always', threads: 2 })).digest).toBe(
        expected,
      );
    },
  );

  test('a tree large enough for worker threads by default', async () => {
    const files: TreeFile[] = [];
    for (let i = 0; i < 2100; i++)
      files.push({
        path: `d${i % 37}/f${i}.txt`,
        content: `file ${i}\n`,
        mode: i % 11 === 0 ? 'x' : 'f',
      });
    files.push({ path: 'big.bin', content: Buffer.alloc(3 * 1024 * 1024 + 17, 7) });
    const root = makeTree(files);
    roots.push(root);
    const threaded = await computePackDigest(root);
    const single = await computePackDigest(root, { parallel: 'never' });
    expect(threaded.digest).toBe(single.digest);
    expect(threaded.entries).toHaveLength(2101);
    expect(threaded.digest).toBe(runRecipe(root));
    // The shell recipe spawns processes per file: on a busy 2-core machine it alone takes ~25 s.
  }, 180_000);
});
