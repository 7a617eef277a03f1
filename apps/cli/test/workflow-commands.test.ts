// The CLI's own human-readable output in a GitHub Actions step (not through the Action, whose
// report.mjs escapes values itself): the runner reads the legacy `##[command]` anywhere in a line
// of stdout or stderr, so a folder a pull request names `x##[error]…` must not form one.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanTemps, cli, copyOfExample, tempDir } from './helpers.js';

const bin = new URL('../dist/bin.cjs', import.meta.url).pathname;
afterEach(cleanTemps);

function verifyAll(fleet: string, env: Record<string, string>) {
  return spawnSync(process.execPath, [bin, 'pack', 'verify', '--all', fleet], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: tempDir(), PACKWARDEN_HOME: tempDir(), ...env },
  });
}

describe('in a GitHub Actions step', () => {
  test('no value forms a legacy ##[command]: a folder named to forge an annotation or mask a word', () => {
    const fleet = tempDir();
    const names = ['x##[error]forged annotation', 'y##[add-mask]verified'];
    for (const name of names) {
      mkdirSync(join(fleet, name));
      cpSync(copyOfExample(), join(fleet, name, 'pack'), { recursive: true });
    }
    const step = verifyAll(fleet, { GITHUB_ACTIONS: 'true' });
    expect(step.status).toBe(0);
    const printed = step.stdout + step.stderr;
    expect(printed).not.toContain('##[');
    expect(printed).toContain('x##\\x5berror]forged annotation/pack');
    // Outside a workflow the names read as they are (controls are still escaped either way).
    const local = verifyAll(fleet, {});
    expect(local.status).toBe(0);
    for (const name of names) expect(local.stdout).toContain(`${name}/pack`);
  });

  test('in-process, the environment given to run decides, call by call', async () => {
    const fleet = tempDir();
    mkdirSync(join(fleet, 'x##[error]forged'));
    cpSync(copyOfExample(), join(fleet, 'x##[error]forged', 'pack'), { recursive: true });
    const args = ['pack', 'verify', '--all', fleet];
    const step = await cli(args, { env: { HOME: tempDir(), GITHUB_ACTIONS: 'true' } });
    expect(step.stdout).toContain('x##\\x5berror]forged/pack');
    const local = await cli(args, { env: { HOME: tempDir() } });
    expect(local.stdout).toContain('x##[error]forged/pack');
  });
});
