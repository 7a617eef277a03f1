import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SandboxError } from '../../src/errors.js';
import {
  createConfinement,
  type Confinement,
  type ConfinementPolicy,
} from '../../src/isolation/index.js';
import { runCommand } from './host-evidence.js';

// bwrap binds each folder of the policy by its host path at every command. A folder the walls
// show that lies inside one they make writable can be swapped between two commands: confined code
// renames a folder on the way and plants a relative link there. On the host the link leads to a
// host folder (the bind's source); inside the new root the same link leads to a folder the new
// root has (the bind's destination). Here: the host's /tmp, with a canary in it, shown as the
// sandbox's /tmp. Real bubblewrap, real files; the verdict is what the second command printed.

let root: string;
let runtimeParent: string;
let canaryDir: string;
const canary = `host-secret-${randomUUID()}`;
const open: Confinement[] = [];

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'pw-nested-'));
  runtimeParent = await mkdtemp(join(tmpdir(), 'pw-runtime-'));
  // A host folder in the host's /tmp that no policy folder contains.
  canaryDir = await mkdtemp(join(tmpdir(), 'pw-canary-'));
  await writeFile(join(canaryDir, 'canary'), canary);
});

afterEach(async () => {
  for (const confinement of open.splice(0)) await confinement.close();
  for (const dir of [root, runtimeParent, canaryDir])
    await rm(dir, { recursive: true, force: true });
});

/** `../` back to `/` from `folder` (a real path), then `target`: the same text in both roots. */
function upToRoot(folder: string, target: string): string {
  return `${'../'.repeat(folder.split('/').filter(Boolean).length)}${target}`;
}

function sh(script: string, cwd: string) {
  return { file: '/bin/sh', args: ['-c', script], cwd, env: { PATH: '/usr/bin:/bin' } };
}

/**
 * Runs the attack: a first command (the pack's code of one turn) swaps `victim`'s parent for a
 * folder whose `victim` entry is the planted link; a second command (the next turn) reads the
 * canary through the sandbox's /tmp. Returns whether the confinement refused the policy at once,
 * and whether the canary leaked.
 */
async function attack(
  policy: ConfinementPolicy,
  victim: string,
  cwd: string,
  readOnlyPaths: string[] = [],
): Promise<{ refused: boolean; leaked: boolean }> {
  let confinement: Confinement;
  try {
    confinement = await createConfinement(policy, {
      mode: 'required',
      runtimeParent,
      readOnlyPaths,
    });
  } catch (error) {
    expect(error).toBeInstanceOf(SandboxError);
    expect((error as SandboxError).code).toBe('ERR_ISOLATION_POLICY_INVALID');
    return { refused: true, leaked: false };
  }
  open.push(confinement);
  const parent = join(victim, '..');
  const name = victim.slice(parent.length + 1);
  const plant = await runCommand(
    confinement.wrap(
      sh(
        `mv "${parent}" "${parent}.moved" && mkdir "${parent}" && ` +
          `ln -s "${upToRoot(parent, 'tmp')}" "${parent}/${name}"`,
        cwd,
      ),
    ),
  );
  expect(plant.stderr).toBe('');
  expect(plant.code).toBe(0);
  const read = await runCommand(
    confinement.wrap(sh(`cat "/tmp/${canaryDir.split('/').pop()}/canary" 2>/dev/null; true`, cwd)),
  );
  return { refused: false, leaked: read.stdout.includes(canary) };
}

describe('a folder the walls show, inside one they make writable, is refused (its parent can be swapped between commands)', () => {
  let workspace: string;
  let engineStateDir: string;

  beforeEach(async () => {
    workspace = join(root, 'workspace');
    engineStateDir = join(root, 'state', 'engine');
    await mkdir(workspace, { recursive: true });
    await mkdir(engineStateDir, { recursive: true });
  });

  it('the pack deeper inside a writable workspace (run ./packs/p --workspace .): the host /tmp never shows', async () => {
    const packDir = join(workspace, 'packs', 'p');
    await mkdir(packDir, { recursive: true });
    await writeFile(join(packDir, 'agent.yaml'), 'kind: Agent\n');
    const outcome = await attack(
      { packDir, workspace, engineStateDir, fileAccess: 'workspace-write', allowOrigins: [] },
      packDir,
      workspace,
    );
    expect(outcome).toEqual({ refused: true, leaked: false });
  });

  it('the workspace inside the engine state folder: the host /tmp never shows (it would be writable)', async () => {
    const packDir = join(root, 'pack');
    const nested = join(engineStateDir, 'home', 'project');
    await mkdir(packDir, { recursive: true });
    await mkdir(nested, { recursive: true });
    const outcome = await attack(
      { packDir, workspace: nested, engineStateDir, fileAccess: 'read-only', allowOrigins: [] },
      nested,
      engineStateDir,
    );
    expect(outcome).toEqual({ refused: true, leaked: false });
  });

  it('a read-only path (an engine CLI package in the workspace node_modules): the host /tmp never shows', async () => {
    const packDir = join(root, 'pack');
    const sdk = join(workspace, 'node_modules', '@vendor', 'cli');
    await mkdir(packDir, { recursive: true });
    await mkdir(sdk, { recursive: true });
    const outcome = await attack(
      { packDir, workspace, engineStateDir, fileAccess: 'workspace-write', allowOrigins: [] },
      sdk,
      workspace,
      [sdk],
    );
    expect(outcome).toEqual({ refused: true, leaked: false });
  });

  it('still allowed: a pack inside a workspace the walls keep read-only, and folders side by side', async () => {
    const packDir = join(workspace, 'packs', 'p');
    await mkdir(packDir, { recursive: true });
    const readOnly = await createConfinement(
      { packDir, workspace, engineStateDir, fileAccess: 'read-only', allowOrigins: [] },
      { mode: 'required', runtimeParent },
    );
    open.push(readOnly);
    const aside = join(root, 'pack');
    await mkdir(aside);
    const sideBySide = await createConfinement(
      {
        packDir: aside,
        workspace,
        engineStateDir,
        fileAccess: 'workspace-write',
        allowOrigins: [],
      },
      { mode: 'required', runtimeParent },
    );
    open.push(sideBySide);
    const result = await runCommand(
      sideBySide.wrap(sh('echo ok > written; cat written', workspace)),
    );
    expect(result.stdout).toBe('ok\n');
    expect(await readFile(join(workspace, 'written'), 'utf8')).toBe('ok\n');
  });
});
