import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { generateKeypair, signEngine, signPack } from '@packwarden/pack-signature';
import { loadPackTrustRoot } from '@packwarden/trust-root';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import {
  applyStateEnvironment,
  confineSandbox,
  createConfinement,
  createSandboxState,
  engineEnvironment,
} from '../../src/index.js';
import {
  agentYaml,
  boot,
  canaryEngine,
  cleanTemps,
  runTurn,
  tempDir,
  writeTree,
} from '../helpers.js';
import { runCommand } from './host-evidence.js';

// What a crash leaves behind, what sits in the folders the walls show, and where the engine's
// code comes from (docs/sandbox.md, "Confinement" and "State").

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
  cleanTemps();
});

function policy(root: string) {
  return {
    packDir: join(root, 'pack'),
    workspace: join(root, 'workspace'),
    engineStateDir: join(root, 'state'),
    fileAccess: 'workspace-write' as const,
    allowOrigins: [],
  };
}

async function layout(): Promise<string> {
  const root = tempDir();
  for (const dir of ['pack', 'workspace', 'state', 'runtime']) await mkdir(join(root, dir));
  return root;
}

describe('leftovers and masks', () => {
  test('a runtime folder whose sandbox was SIGKILLed is removed by the next confinement in the same state; a live one is kept', async () => {
    const root = await layout();
    const runtimeParent = join(root, 'runtime');
    // A sandbox process that dies without close(): its runtime folder names it as the owner.
    const victim = spawn('sleep', ['30'], { stdio: 'ignore' });
    await new Promise((resolve) => victim.once('spawn', resolve));
    const stale = join(runtimeParent, 'pw-confine-killed');
    await mkdir(join(stale, 'run'), { recursive: true });
    await writeFile(join(stale, 'owner.pid'), String(victim.pid));
    victim.kill('SIGKILL');
    await new Promise((resolve) => victim.once('exit', resolve));
    // Another sandbox, alive, with its own folder in the same parent.
    const live = join(runtimeParent, 'pw-confine-live');
    await mkdir(live);
    await writeFile(join(live, 'owner.pid'), String(process.pid));

    const confinement = await createConfinement(policy(root), { mode: 'required', runtimeParent });
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(live)).toBe(true);
    const own = readdirSync(runtimeParent).filter((name) => !['pw-confine-live'].includes(name));
    expect(own).toHaveLength(1);
    expect(readFileSync(join(runtimeParent, own[0]!, 'owner.pid'), 'utf8')).toBe(
      String(process.pid),
    );
    await confinement.close();
    expect(readdirSync(runtimeParent)).toEqual(['pw-confine-live']);
  });

  test('a runtime folder without an owner file is removed once older than a minute, kept while younger', async () => {
    const root = await layout();
    const runtimeParent = join(root, 'runtime');
    // A crash between making the folder and writing its owner file leaves one without it.
    const old = join(runtimeParent, 'pw-confine-crashed');
    const young = join(runtimeParent, 'pw-confine-starting');
    for (const dir of [old, young]) await mkdir(join(dir, 'run'), { recursive: true });
    const twoMinutesAgo = new Date(Date.now() - 120_000);
    utimesSync(old, twoMinutesAgo, twoMinutesAgo);

    const confinement = await createConfinement(policy(root), { mode: 'required', runtimeParent });
    expect(existsSync(old)).toBe(false);
    expect(existsSync(young)).toBe(true);
    await confinement.close();
    expect(readdirSync(runtimeParent)).toEqual(['pw-confine-starting']);
  });

  test('a state folder that cannot be made is ERR_STATE_DIR, naming it', async () => {
    const root = tempDir();
    writeFileSync(join(root, 'file'), 'not a folder');
    await expect(createSandboxState(join(root, 'file', 'state'), undefined)).rejects.toMatchObject({
      code: 'ERR_STATE_DIR',
      message: expect.stringContaining(`cannot create ${join(root, 'file', 'state')}`),
    });
  });

  test.each([
    ['engine/tmp', 'TMPDIR'],
    ['engine/home', 'HOME'],
    ['engine/cache/npm', "npm's cache"],
    ['engine', 'the whole engine folder'],
  ])(
    'a symlink pack code left at <state>/%s (%s) is refused at the next boot, never followed',
    async (planted) => {
      const stateDir = tempDir();
      await createSandboxState(stateDir, undefined);
      const outside = tempDir();
      writeFileSync(join(outside, 'precious'), 'keep');
      rmSync(join(stateDir, planted), { recursive: true, force: true });
      symlinkSync(outside, join(stateDir, planted));
      await expect(createSandboxState(stateDir, undefined)).rejects.toMatchObject({
        code: 'ERR_UNSAFE_PATH',
        message: expect.stringContaining('symlink'),
      });
      expect(readdirSync(outside)).toEqual(['precious']);
    },
  );

  test('a host unix socket inside the pack folder cannot be reached from inside the walls', async () => {
    const root = await layout();
    const socketPath = join(root, 'pack', 'nested', 'deeper', 'agent.sock');
    await mkdir(join(root, 'pack', 'nested', 'deeper'), { recursive: true });
    let connections = 0;
    const server = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    const confinement = await createConfinement(policy(root), {
      mode: 'required',
      runtimeParent: join(root, 'runtime'),
    });
    const probe = `require('net').connect(${JSON.stringify(socketPath)}).on('connect', () => console.log('connected')).on('error', (e) => console.log('refused', e.code));`;
    const result = await runCommand(
      confinement.wrap({
        file: process.execPath,
        args: ['-e', probe],
        cwd: join(root, 'workspace'),
        env: { PATH: '/usr/bin:/bin' },
      }),
    );
    await confinement.close();
    expect(result.stdout).toMatch(/^refused /);
    expect(connections).toBe(0);
    // The positive control: the same probe outside the walls does connect.
    const outside = await runCommand({
      file: process.execPath,
      args: ['-e', probe],
      cwd: root,
      env: { PATH: '/usr/bin:/bin' },
    });
    expect(outside.stdout).toMatch(/^connected/);
  });

  /**
   * Boots `pack` with its engine confined ('required'), runs one turn of the canary engine and
   * checks that it ran inside the walls: it answered and wrote its canary into the workspace.
   */
  async function runConfinedTurn(
    pack: string,
    state: Awaited<ReturnType<typeof createSandboxState>>,
    canary: string,
    signature: Partial<Parameters<typeof boot>[1]> = {},
  ): Promise<void> {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    applyStateEnvironment(env, state);
    const { booted } = await boot(pack, {
      stateDir: state.stateDir,
      ...signature,
      env: { PACKWARDEN_HOME: state.packwardenHome },
      engineEnv: engineEnvironment(env),
      confine: ({ packDir, manifest }) =>
        confineSandbox('required', { packDir, manifest, state }, process.env),
    });
    try {
      expect(booted.degraded).toBeUndefined();
      const { text, error } = await runTurn(await booted.createEngine(), {
        workspaceRoot: state.workspace,
        stateDir: state.engineDir,
      });
      expect(error).toBeUndefined();
      expect(text).toBe('planted');
      expect(readFileSync(canary, 'utf8')).toBe('ran');
    } finally {
      await booted.confinement?.close();
    }
  }

  // An empty `engines/mine/` in the pack is skipped by the loader; confinement used to see the
  // folder and mount no installed engine, which then could not start. Empty folders are no
  // digest entries, so one can be added to a signed pack.
  test.each([
    ['', false],
    [', even beside an empty engines/<id>/ folder of the pack', true],
  ])(
    'without a signature requirement, an engine installed in the sandbox home runs inside the walls (its folder visible read-only)%s',
    async (_title, emptyPackFolder) => {
      const stateDir = tempDir();
      const state = await createSandboxState(stateDir, undefined);
      const canary = join(state.workspace, 'engine-ran');
      writeTree(join(state.packwardenHome, 'engines', 'mine'), canaryEngine('mine', canary));
      const pack = writeTree(join(tempDir(), 'uses-installed'), {
        'agent.yaml': agentYaml(
          'uses-installed',
          '  engine: mine\n  permissions: {fileAccess: workspace-write}\n',
        ),
      });
      if (emptyPackFolder) mkdirSync(join(pack, 'engines', 'mine'), { recursive: true });
      await runConfinedTurn(pack, state, canary);
    },
  );

  test('a pack named through a symlink runs its own engine inside the walls (they mount its real path)', async () => {
    const state = await createSandboxState(tempDir(), undefined);
    const canary = join(state.workspace, 'engine-ran');
    const real = writeTree(join(tempDir(), 'linked-pack'), {
      'agent.yaml': agentYaml(
        'linked-pack',
        '  engine: mine\n  permissions: {fileAccess: workspace-write}\n',
      ),
      ...Object.fromEntries(
        Object.entries(canaryEngine('mine', canary)).map(([k, v]) => [`engines/mine/${k}`, v]),
      ),
    });
    const link = join(tempDir(), 'current');
    symlinkSync(real, link);
    await runConfinedTurn(link, state, canary);
  });

  test('with a signature required, an installed signed engine runs inside the walls from its verified copy', async () => {
    const key = await generateKeypair({ kid: 'release' });
    const stateDir = tempDir();
    const state = await createSandboxState(stateDir, undefined);
    const canary = join(state.workspace, 'engine-ran');
    const installed = writeTree(
      join(state.packwardenHome, 'engines', 'mine', '1.0.0'),
      canaryEngine('mine', canary),
    );
    writeFileSync(join(state.packwardenHome, 'engines', 'mine', 'current.txt'), '1.0.0\n');
    await signEngine(installed, { privateKeyPem: key.privateKeyPem, kid: key.kid });
    const pack = writeTree(join(tempDir(), 'uses-signed'), {
      'agent.yaml': agentYaml(
        'uses-signed',
        '  engine: mine\n  permissions: {fileAccess: workspace-write}\n',
      ),
    });
    await signPack(pack, { privateKeyPem: key.privateKeyPem, kid: key.kid });
    await runConfinedTurn(pack, state, canary, {
      requireSigned: true,
      trustRoot: () =>
        loadPackTrustRoot({ keys: { [key.kid]: key.publicKeyPem }, cacheDir: false, env: {} }),
    });
    expect(existsSync(join(stateDir, 'verified-engines', 'mine', 'engine.sig'))).toBe(true);
  });
});
