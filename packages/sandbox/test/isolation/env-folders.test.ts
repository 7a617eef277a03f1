import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { createConfinement } from '../../src/index.js';
import type { Confinement } from '../../src/isolation/types.js';
import { cleanTemps, tempDir } from '../helpers.js';
import { runCommand } from './host-evidence.js';

// Each confined command gets a one-use environment folder of its own, bound writable into its
// sandbox (docs/sandbox.md, "Confinement"). Once the launcher has used it, the folder goes at the
// next wrap, whatever the command left in it; a folder of a command not started yet stays.

let confinement: Confinement | undefined;
afterEach(async () => {
  await confinement?.close();
  confinement = undefined;
  cleanTemps();
});

async function setUp(): Promise<{ root: string; envDir: () => string }> {
  const root = tempDir();
  for (const dir of ['pack', 'workspace', 'state', 'runtime', 'outside'])
    await mkdir(join(root, dir));
  writeFileSync(join(root, 'outside', 'precious'), 'keep');
  confinement = await createConfinement(
    {
      packDir: join(root, 'pack'),
      workspace: join(root, 'workspace'),
      engineStateDir: join(root, 'state'),
      fileAccess: 'workspace-write',
      allowOrigins: [],
    },
    { mode: 'required', runtimeParent: join(root, 'runtime') },
  );
  const [runtime] = readdirSync(join(root, 'runtime'));
  return { root, envDir: () => join(root, 'runtime', runtime!, 'env') };
}

/** Wraps `script` for /bin/sh and returns the command with the name of the folder it got. */
function wrapShell(root: string, envDir: string, script: string) {
  const before = new Set(readdirSync(envDir));
  const command = confinement!.wrap({
    file: '/bin/sh',
    args: ['-c', script],
    cwd: join(root, 'workspace'),
    env: { PATH: '/usr/bin:/bin' },
  });
  const folder = readdirSync(envDir).find((name) => !before.has(name));
  expect(folder).toBeDefined();
  return { command, folder: folder! };
}

describe('per-command environment folders', () => {
  test.each([
    ['a file', 'echo left > /run/packwarden-env/left-behind'],
    ['a nested folder', 'mkdir -p /run/packwarden-env/a/b && echo x > /run/packwarden-env/a/b/c'],
    ['a new env.sh', 'echo "export FAKE=1" > /run/packwarden-env/env.sh'],
    ['a symlink to a host folder', `ln -s "$OUTSIDE" /run/packwarden-env/link`],
  ])(
    'a used folder holding %s is removed at the next wrap, links not followed',
    async (_, leave) => {
      const { root, envDir } = await setUp();
      const outside = join(root, 'outside');
      const used = wrapShell(root, envDir(), `OUTSIDE=${outside}; ${leave}; echo ran`);
      const result = await runCommand(used.command);
      expect(result.stdout).toContain('ran');
      expect(readdirSync(join(envDir(), used.folder)).length).toBeGreaterThan(0);

      const next = wrapShell(root, envDir(), 'echo next');
      expect(readdirSync(envDir()).sort()).toEqual([next.folder]);
      expect(readdirSync(outside)).toEqual(['precious']);
      // The folder left for the command not started yet is intact: it still runs.
      expect((await runCommand(next.command)).stdout).toBe('next\n');
    },
  );

  test('a folder whose command has not started stays, and no number of them starves a used one', async () => {
    const { root, envDir } = await setUp();
    const waiting = Array.from({ length: 1030 }, () => wrapShell(root, envDir(), 'echo later'));
    const used = wrapShell(root, envDir(), 'echo mess > /run/packwarden-env/mess; echo ran');
    expect((await runCommand(used.command)).stdout).toBe('ran\n');

    const next = wrapShell(root, envDir(), 'echo next');
    expect(existsSync(join(envDir(), used.folder))).toBe(false);
    expect(readdirSync(envDir()).sort()).toEqual(
      [...waiting.map((w) => w.folder), next.folder].sort(),
    );
    // The longest-waiting command still finds its environment.
    expect((await runCommand(waiting[0]!.command)).stdout).toBe('later\n');
  });
});
