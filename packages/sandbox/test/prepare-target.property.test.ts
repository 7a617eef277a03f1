import {
  lstatSync,
  mkdirSync,
  readdirSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, test } from 'vitest';
import { SandboxError, prepareTargetDir } from '../src/index.js';
import { cleanTemps, tempDir } from './helpers.js';

afterEach(cleanTemps);

type Level = 'missing' | 'folder' | 'file' | 'link-outside' | 'link-inside';

/** Lays out `.packwarden/agents/victim` with each level as given, and a folder outside. */
function layout(levels: Level[]) {
  const root = tempDir();
  const outside = tempDir();
  writeFileSync(join(outside, 'precious.txt'), 'keep me');
  const segments = ['.packwarden', 'agents', 'victim'];
  let path = root;
  for (const [index, level] of levels.entries()) {
    path = join(path, segments[index] as string);
    if (level === 'missing') break;
    if (level === 'folder') mkdirSync(path);
    if (level === 'file') {
      writeFileSync(path, 'a file');
      break;
    }
    if (level === 'link-outside') {
      symlinkSync(outside, path);
      break;
    }
    if (level === 'link-inside') {
      mkdirSync(join(root, 'elsewhere'), { recursive: true });
      symlinkSync(join(root, 'elsewhere'), path);
      break;
    }
  }
  return { root, outside, segments };
}

describe('prepareTargetDir (property)', () => {
  test('whatever the workspace holds, it returns a real empty folder inside the root or refuses with ERR_UNSAFE_PATH, and never touches the outside', async () => {
    const level = fc.constantFrom<Level>(
      'missing',
      'folder',
      'file',
      'link-outside',
      'link-inside',
    );
    await fc.assert(
      fc.asyncProperty(fc.array(level, { minLength: 3, maxLength: 3 }), async (levels) => {
        const { root, outside, segments } = layout(levels);
        const linked = levels.findIndex((l) => l !== 'folder');
        const unsafe =
          linked !== -1 &&
          ['file', 'link-outside', 'link-inside'].includes(levels[linked] as Level);
        try {
          const target = await prepareTargetDir(root, segments);
          expect(unsafe).toBe(false);
          expect(target).toBe(join(root, ...segments));
          expect(realpathSync(target)).toBe(target);
          expect(lstatSync(target).isDirectory()).toBe(true);
          expect(readdirSync(target)).toEqual([]);
        } catch (error) {
          expect(error).toBeInstanceOf(SandboxError);
          expect((error as SandboxError).code).toBe('ERR_UNSAFE_PATH');
          expect(unsafe).toBe(true);
        }
        expect(readdirSync(outside)).toEqual(['precious.txt']);
      }),
      { numRuns: 60 },
    );
  });
});
