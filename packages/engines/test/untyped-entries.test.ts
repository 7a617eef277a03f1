// holdsContent and the codex rollout search on a file system whose readdir gives no entry types (DT_UNKNOWN: NFS, FUSE, XFS
// without ftype). None can be mounted here, so readdirSync is the real one with each Dirent made
// again as Node makes it for DT_UNKNOWN (type 0), and so is fs/promises' readdir.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { refusedCalls } from '../src/codex-rollout.js';
import { holdsContent } from '../src/pack-content.js';
import { cleanTemps, CODEX_ROLLOUT, CODEX_THREAD, codexRolloutFolder, tempDir } from './helpers.js';

const untyped = vi.hoisted(() => ({ on: false, made: 0 }));
vi.mock('node:fs', async (actual) =>
  (await import('../../../scripts/untyped-dirents.js')).untypedFs(await actual(), untyped),
);
vi.mock('node:fs/promises', async (actual) =>
  (await import('../../../scripts/untyped-dirents.js')).untypedFsPromises(
    await actual(),
    await import('node:fs'),
    untyped,
  ),
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

describe("codex's session rollout without entry types from readdir", () => {
  test('the rollout is found under sessions/YYYY/MM/DD, and a linked folder is not followed', async () => {
    const { home, file } = codexRolloutFolder();
    writeFileSync(file, `${CODEX_ROLLOUT}\n`);
    const linked = tempDir();
    const away = join(linked, 'sessions', '2026');
    mkdirSync(away, { recursive: true });
    symlinkSync(join(home, 'sessions', '2026', '12'), join(away, '12'));
    const expected = [
      {
        callId: 'call-1',
        name: 'shell',
        input: { command: ['cat', '/etc/shadow'] },
        output: 'refused',
      },
    ];
    expect(await refusedCalls(home, CODEX_THREAD)).toEqual(expected);
    expect(await refusedCalls(linked, CODEX_THREAD)).toBeUndefined();
    untyped.on = true;
    untyped.made = 0;
    expect(await refusedCalls(home, CODEX_THREAD)).toEqual(expected);
    expect(untyped.made).toBeGreaterThanOrEqual(4);
    expect(await refusedCalls(linked, CODEX_THREAD)).toBeUndefined();
  });
});
