/**
 * The claude and codex CLIs keep their own folder in the engine state (`<stateDir>/claude`,
 * `<stateDir>/codex`), which confined commands can write: one may have replaced it with a link to
 * a host folder. The host never follows one there: the turn fails as `engine_state_refused`,
 * before the CLI starts, and nothing is made or read outside.
 */
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanTemps, tempDir } from './helpers.js';
import { standinTurnSetup } from './sdk-helpers.js';

afterEach(cleanTemps);

describe.each(['claude', 'codex'] as const)('the %s home in the engine state', (engine) => {
  test('a link to a host folder fails the turn closed; the folder is left as it was', async () => {
    const { runtime, records, s } = await standinTurnSetup(engine, 'text', 'workspace-write');
    const outside = tempDir();
    writeFileSync(join(outside, 'precious'), 'keep');
    symlinkSync(outside, join(runtime.stateDir, engine));
    const { outcome } = await s.run({ message: 'hello' });
    await s.close();
    expect(outcome).toMatchObject({
      type: 'failed',
      error: { code: 'engine_state_refused', message: expect.stringContaining('symbolic link') },
    });
    expect(records()).toEqual([]);
    expect(readdirSync(outside)).toEqual(['precious']);
  });

  test('a dangling link is not followed to make its target', async () => {
    const { runtime, records, s } = await standinTurnSetup(engine, 'text', 'workspace-write');
    const target = join(tempDir(), 'made-by-the-host');
    symlinkSync(target, join(runtime.stateDir, engine));
    const { outcome } = await s.run({ message: 'hello' });
    await s.close();
    expect(outcome).toMatchObject({ type: 'failed', error: { code: 'engine_state_refused' } });
    expect(records()).toEqual([]);
    expect(existsSync(target)).toBe(false);
  });

  test('a real folder there is used as before', async () => {
    const { runtime, s } = await standinTurnSetup(engine, 'text', 'workspace-write');
    mkdirSync(join(runtime.stateDir, engine));
    const { outcome } = await s.run({ message: 'hello' });
    await s.close();
    expect(outcome).toMatchObject({ type: 'result' });
  });
});
