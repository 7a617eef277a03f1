import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateKeypair, signEngine, signPack } from '@packwarden/pack-signature';
import { loadPackTrustRoot } from '@packwarden/trust-root';
import { afterEach, describe, expect, test } from 'vitest';
import { createSandboxState, SandboxError } from '../src/index.js';
import { agentYaml, boot, cleanTemps, runTurn, tempDir, writeTree } from './helpers.js';

afterEach(cleanTemps);

type Key = Awaited<ReturnType<typeof generateKeypair>>;

/** An engine that answers with the URL of its own module: which copy of the code ran. */
function whereEngine(id: string, version: string, canary: string): Record<string, string> {
  return {
    'engine.manifest.json': JSON.stringify({
      version: 2,
      id,
      entry: './engine.mjs',
      engineExport: 'Engine',
    }),
    'package.json': JSON.stringify({ name: id, version }),
    'engine.mjs': `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(canary)}, 'imported');\nexport class Engine { async run(turn) { await turn.emitter.text(import.meta.url); } }\n`,
  };
}

function trustRootFor(...keys: Key[]) {
  return () =>
    loadPackTrustRoot({
      keys: Object.fromEntries(keys.map((key) => [key.kid, key.publicKeyPem])),
      cacheDir: false,
      env: {},
    });
}

/**
 * A signed pack naming `engine: <id>`, and a state dir whose PACKWARDEN_HOME holds the engine
 * installed the way `store install engine/<id>` lays it out: `engines/<id>/<version>/` and
 * `engines/<id>/current.txt`. The engine is signed with `engineKey` when given.
 */
async function setup(options: { packKey: Key; engineKey?: Key }) {
  const id = 'where';
  const pack = writeTree(join(tempDir(), 'uses-where'), {
    'agent.yaml': agentYaml('uses-where', `  engine: ${id}\n`),
  });
  await signPack(pack, { privateKeyPem: options.packKey.privateKeyPem, kid: options.packKey.kid });
  const stateDir = tempDir();
  const state = await createSandboxState(stateDir, undefined);
  const canary = join(tempDir(), 'where-imported');
  const installed = writeTree(
    join(state.packwardenHome, 'engines', id, '1.0.0'),
    whereEngine(id, '1.0.0', canary),
  );
  writeFileSync(join(state.packwardenHome, 'engines', id, 'current.txt'), '1.0.0\n');
  if (options.engineKey) {
    await signEngine(installed, {
      privateKeyPem: options.engineKey.privateKeyPem,
      kid: options.engineKey.kid,
    });
  }
  return { pack, stateDir, state, installed, canary };
}

async function refusal(promise: Promise<unknown>): Promise<SandboxError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SandboxError);
  return error as SandboxError;
}

describe('engines installed from a store, under a required signature (docs/sandbox.md)', () => {
  test('a signed installed engine runs a turn, loaded from its verified copy in the state dir', async () => {
    const key = await generateKeypair({ kid: 'release' });
    const { pack, stateDir, installed } = await setup({ packKey: key, engineKey: key });
    const { booted, state } = await boot(pack, {
      stateDir,
      requireSigned: true,
      trustRoot: trustRootFor(key),
    });
    expect(booted.engine.id).toBe('where');
    const turn = await runTurn(await booted.createEngine(), {
      workspaceRoot: state.workspace,
      stateDir,
    });
    const copy = join(stateDir, 'verified-engines', 'where');
    expect(turn.text).toBe(`file://${join(copy, 'engine.mjs')}`);
    expect(turn.text).not.toContain(installed);
    expect(readFileSync(join(copy, 'engine.sig'), 'utf8')).toBe(
      readFileSync(join(installed, 'engine.sig'), 'utf8'),
    );
  });

  test('swapping the installed engine after the check changes nothing: only the verified copy loads', async () => {
    const key = await generateKeypair({ kid: 'release' });
    const { pack, stateDir, installed } = await setup({ packKey: key, engineKey: key });
    const { booted, state } = await boot(pack, {
      stateDir,
      requireSigned: true,
      trustRoot: trustRootFor(key),
    });
    const swapped = join(tempDir(), 'swapped-ran');
    // Pack code may write <state>/packwarden: it rewrites the engine between verify and load.
    writeFileSync(
      join(installed, 'engine.mjs'),
      `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(swapped)}, 'ran');\nexport class Engine { async run(turn) { await turn.emitter.text('swapped'); } }\n`,
    );
    // The spare engine (loaded at boot), then a fresh one for a second session.
    for (let session = 0; session < 2; session++) {
      const turn = await runTurn(await booted.createEngine(), {
        workspaceRoot: state.workspace,
        stateDir,
      });
      expect(turn.text).toBe(`file://${join(stateDir, 'verified-engines', 'where', 'engine.mjs')}`);
    }
    expect(existsSync(swapped)).toBe(false);
  });

  test('one byte of the installed engine changed after signing is refused at boot', async () => {
    const key = await generateKeypair({ kid: 'release' });
    const { pack, stateDir, installed, canary } = await setup({ packKey: key, engineKey: key });
    const file = join(installed, 'engine.mjs');
    const bytes = readFileSync(file);
    bytes[bytes.length - 2] = bytes[bytes.length - 2]! ^ 0x01;
    writeFileSync(file, bytes);
    const error = await refusal(
      boot(pack, { stateDir, requireSigned: true, trustRoot: trustRootFor(key) }),
    );
    expect(error.code).toBe('ERR_ENGINE_UNVERIFIED');
    expect(error.message).toContain('invalid');
    expect(existsSync(canary)).toBe(false);
  });

  test('an unsigned installed engine is refused', async () => {
    const key = await generateKeypair({ kid: 'release' });
    const { pack, stateDir, canary } = await setup({ packKey: key });
    const error = await refusal(
      boot(pack, { stateDir, requireSigned: true, trustRoot: trustRootFor(key) }),
    );
    expect(error.code).toBe('ERR_ENGINE_UNVERIFIED');
    expect(error.message).toContain('unsigned');
    expect(existsSync(canary)).toBe(false);
  });

  test('an engine signed by a key the trust root does not hold is refused', async () => {
    const key = await generateKeypair({ kid: 'release' });
    const stranger = await generateKeypair({ kid: 'stranger' });
    const { pack, stateDir, canary } = await setup({ packKey: key, engineKey: stranger });
    const error = await refusal(
      boot(pack, { stateDir, requireSigned: true, trustRoot: trustRootFor(key) }),
    );
    expect(error.code).toBe('ERR_ENGINE_UNVERIFIED');
    expect(error.message).toContain('untrusted-key');
    expect(existsSync(canary)).toBe(false);
  });

  test('without a required signature the installed engine loads from where it is installed', async () => {
    const key = await generateKeypair({ kid: 'release' });
    const { pack, stateDir, installed } = await setup({ packKey: key });
    const { booted, state } = await boot(pack, { stateDir });
    const turn = await runTurn(await booted.createEngine(), {
      workspaceRoot: state.workspace,
      stateDir,
    });
    expect(turn.text).toBe(`file://${join(installed, 'engine.mjs')}`);
    expect(existsSync(join(stateDir, 'verified-engines'))).toBe(false);
  });
});
