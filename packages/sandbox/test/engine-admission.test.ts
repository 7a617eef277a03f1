import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { SandboxError, createSandboxState } from '../src/index.js';
import {
  agentYaml,
  boot,
  canaryEngine,
  cleanTemps,
  runTurn,
  tempDir,
  writeTree,
} from './helpers.js';
import { signWithNewKey } from './signing.js';

afterEach(cleanTemps);

const execSpec = '  engine: exec\n  exec: {command: [./run.sh]}\n';

describe('what may load (docs/sandbox.md)', () => {
  test('a signed pack naming an engine it does not ship refuses boot: the engine planted in the state dir never runs', async () => {
    const pack = writeTree(join(tempDir(), 'signed'), {
      'agent.yaml': agentYaml('signed', '  engine: ghost\n'),
    });
    const trustRoot = await signWithNewKey(pack);
    const stateDir = tempDir();
    const state = await createSandboxState(stateDir, undefined);
    const canary = join(tempDir(), 'ghost-ran');
    writeTree(join(state.packwardenHome, 'engines', 'ghost'), canaryEngine('ghost', canary));

    const refused = await boot(pack, { stateDir, requireSigned: true, trustRoot }).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(SandboxError);
    expect((refused as SandboxError).code).toBe('ERR_ENGINE_UNVERIFIED');
    expect(existsSync(canary)).toBe(false);
  });

  test('without a required signature the installed engine still loads (nothing is verified then)', async () => {
    const pack = writeTree(join(tempDir(), 'plain'), {
      'agent.yaml': agentYaml('plain', '  engine: ghost\n'),
    });
    const stateDir = tempDir();
    const state = await createSandboxState(stateDir, undefined);
    const canary = join(tempDir(), 'ghost-ran');
    writeTree(join(state.packwardenHome, 'engines', 'ghost'), canaryEngine('ghost', canary));
    const { booted, state: booted_state } = await boot(pack, { stateDir });
    expect(booted.engine.id).toBe('ghost');
    const turn = await runTurn(await booted.createEngine(), {
      workspaceRoot: booted_state.workspace,
      stateDir: booted_state.stateDir,
    });
    expect(turn).toEqual({ text: 'planted' });
    expect(readFileSync(canary, 'utf8')).toBe('ran');
  });

  test.each([
    ['in the state dir', 'state'],
    ['in the pack itself', 'pack'],
  ])(
    'a folder named engines/exec/ %s never replaces the built-in exec, signed or not',
    async (_label, where) => {
      const canary = join(tempDir(), 'fake-exec-ran');
      const pack = writeTree(join(tempDir(), 'uses-exec'), {
        'agent.yaml': agentYaml('uses-exec', execSpec),
        'run.sh': '#!/bin/sh\necho \'{"type":"text","delta":"real exec"}\'\n',
        ...(where === 'pack'
          ? Object.fromEntries(
              Object.entries(canaryEngine('exec', canary)).map(([k, v]) => [
                `engines/exec/${k}`,
                v,
              ]),
            )
          : {}),
      });
      chmodSync(join(pack, 'run.sh'), 0o755);
      const trustRoot = await signWithNewKey(pack);
      for (const requireSigned of [true, false]) {
        const stateDir = tempDir();
        const state = await createSandboxState(stateDir, undefined);
        if (where === 'state')
          writeTree(join(state.packwardenHome, 'engines', 'exec'), canaryEngine('exec', canary));
        const { booted } = await boot(pack, { stateDir, requireSigned, trustRoot });
        expect(booted.engine.id).toBe('exec');
        const engine = await booted.createEngine();
        expect(engine.id).toBe('exec');
        const turn = await runTurn(engine, { workspaceRoot: state.workspace, stateDir });
        expect(turn).toEqual({ text: 'real exec' });
        expect(existsSync(canary)).toBe(false);
      }
    },
  );

  test('a signed pack’s own engine loads from the verified copy', async () => {
    const canary = join(tempDir(), 'own-ran');
    const pack = writeTree(join(tempDir(), 'own'), {
      'agent.yaml': agentYaml('own', '  engine: mine\n'),
      ...Object.fromEntries(
        Object.entries(canaryEngine('mine', canary)).map(([k, v]) => [`engines/mine/${k}`, v]),
      ),
    });
    const trustRoot = await signWithNewKey(pack);
    const stateDir = tempDir();
    mkdirSync(join(stateDir, 'packwarden', 'engines', 'mine'), { recursive: true });
    const { booted, state } = await boot(pack, { stateDir, requireSigned: true, trustRoot });
    expect(booted.packDir).toBe(join(stateDir, 'pack'));
    expect(booted.verification?.kind).toBe('verified');
    const turn = await runTurn(await booted.createEngine(), {
      workspaceRoot: state.workspace,
      stateDir,
    });
    expect(turn).toEqual({ text: 'planted' });
    expect(readFileSync(canary, 'utf8')).toBe('ran');
  });

  test('an empty skill folder added to a signed pack does not reach its engine: folders are not signed', async () => {
    const pack = writeTree(join(tempDir(), 'skilled'), {
      'agent.yaml': agentYaml('skilled', '  engine: lister\n'),
      'skills/real/SKILL.md': '# real\n',
      'engines/lister/engine.manifest.json': JSON.stringify({
        version: 2,
        id: 'lister',
        entry: 'lister.mjs',
        engineExport: 'Engine',
      }),
      'engines/lister/lister.mjs':
        "import { readdirSync } from 'node:fs';\nexport class Engine { async run(turn) { await turn.emitter.text(readdirSync(turn.agent.skillsDir).sort().join(',')); } }\n",
    });
    const trustRoot = await signWithNewKey(pack);
    // Added after signing: the digest does not change, so the signature still verifies.
    mkdirSync(join(pack, 'skills', 'ghost', 'inside'), { recursive: true });
    const stateDir = tempDir();
    const { booted, state } = await boot(pack, { stateDir, requireSigned: true, trustRoot });
    expect(booted.verification?.kind).toBe('verified');
    expect(existsSync(join(stateDir, 'pack', 'skills', 'ghost'))).toBe(false);
    const turn = await runTurn(await booted.createEngine(), {
      workspaceRoot: state.workspace,
      stateDir,
    });
    expect(turn).toEqual({ text: 'real' });
  });
});
