// holdsContent on a file system whose readdir gives no entry types (DT_UNKNOWN: NFS, FUSE, XFS
// without ftype). None can be mounted here, so readdirSync is the real one with each Dirent made
// again as Node makes it for DT_UNKNOWN (type 0).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { holdsContent } from '../src/pack-content.js';
import { cleanTemps, tempDir } from './helpers.js';

const untyped = vi.hoisted(() => ({ on: false, made: 0 }));
vi.mock('node:fs', async (actual) =>
  (await import('../../../scripts/untyped-dirents.js')).untypedFs(await actual(), untyped),
);

afterEach(() => {
  untyped.on = false;
  cleanTemps();
});

describe('holdsContent without entry types from readdir', () => {
  test('folders of empty folders hold nothing; a file deep down is content', async () => {
    const empty = tempDir();
    mkdirSync(join(empty, 'a', 'b'), { recursive: true });
    const full = tempDir();
    mkdirSync(join(full, 'a', 'b'), { recursive: true });
    writeFileSync(join(full, 'a', 'b', 'SKILL.md'), 'hi\n');
    const typed = [await holdsContent(empty), await holdsContent(full)];
    untyped.on = true;
    expect([await holdsContent(empty), await holdsContent(full)]).toEqual(typed);
    expect(typed).toEqual([false, true]);
  });
});
