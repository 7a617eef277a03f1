import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { loadCustomEngine } from '../src/index.js';
import { wireSession } from './contract-helpers.js';
import { cleanTemps, tempDir, textOf } from './helpers.js';

afterEach(cleanTemps);

/**
 * Issue 9, W1: a verified engine's bare import of a package the pack does not ship resolved
 * upward into `<state>/node_modules`, a folder the previous run (or the engine itself) could
 * write. The state dir here holds the verified pack copy, as the sandbox's does.
 */
function plantedState(engineSource: string) {
  const state = tempDir();
  const canary = join(state, 'canary');
  const evil = join(state, 'node_modules', 'evil');
  mkdirSync(evil, { recursive: true });
  const plant = `require('node:fs').writeFileSync(${JSON.stringify(canary)}, 'planted code ran');`;
  writeFileSync(
    join(evil, 'package.json'),
    JSON.stringify({ name: 'evil', version: '1.0.0', main: 'index.cjs' }),
  );
  writeFileSync(join(evil, 'index.cjs'), `${plant}\nmodule.exports = { evil: true };\n`);
  const pack = join(state, 'pack');
  const engineDir = join(pack, 'engines', 'x');
  mkdirSync(engineDir, { recursive: true });
  writeFileSync(
    join(engineDir, 'engine.manifest.json'),
    JSON.stringify({ version: 2, id: 'x', entry: './engine.mjs', engineExport: 'X' }),
  );
  writeFileSync(join(engineDir, 'engine.mjs'), engineSource);
  return {
    state,
    canary,
    evil,
    engineDir,
    runtime: { workspaceRoot: tempDir(), stateDir: state },
    pack: { id: 'p', version: '1.0.0' },
  };
}

describe('module resolution of a custom engine stays inside the engine and the pack', () => {
  test('the attack is real: plain Node resolves the bare name into <state>/node_modules', () => {
    const { engineDir, evil } = plantedState('');
    expect(createRequire(join(engineDir, 'engine.mjs')).resolve('evil')).toBe(
      join(evil, 'index.cjs'),
    );
  });

  test('a static import of a planted package refuses the load, and the planted code never runs', async () => {
    const planted = plantedState(
      "import 'evil';\nexport class X { async run(turn) { await turn.emitter.text('ran'); } }\n",
    );
    await expect(
      loadCustomEngine(planted.engineDir, { pack: planted.pack, runtime: planted.runtime }),
    ).rejects.toMatchObject({
      code: 'ERR_ENGINE_RESOLVE_REFUSED',
      message: expect.stringContaining('"evil"'),
    });
    expect(existsSync(planted.canary)).toBe(false);
  });

  test('a dynamic import or a require() during a turn fails the turn with engine_resolve_refused', async () => {
    const planted = plantedState(
      [
        "import { createRequire } from 'node:module';",
        'export class X {',
        '  async run(turn) {',
        "    if (turn.message === 'import') await import('evil');",
        "    if (turn.message === 'require') createRequire(import.meta.url)('evil');",
        "    if (turn.message === 'builtin') await turn.emitter.text(typeof (await import('node:os')).cpus);",
        '  }',
        '}',
      ].join('\n'),
    );
    const engine = await loadCustomEngine(planted.engineDir, {
      pack: planted.pack,
      runtime: planted.runtime,
    });
    const s = wireSession(engine, planted.runtime);
    for (const message of ['import', 'require']) {
      expect((await s.run({ message })).outcome).toMatchObject({
        type: 'failed',
        error: { code: 'engine_resolve_refused' },
      });
    }
    // Built-ins stay available.
    const builtin = await s.run({ message: 'builtin' });
    expect(textOf(builtin.events)).toBe('function');
    expect(existsSync(planted.canary)).toBe(false);
    await s.close();
  });

  test('a link inside the engine folder that leads to the planted package is refused too', async () => {
    const planted = plantedState(
      "import 'evil';\nexport class X { async run(turn) { await turn.emitter.text('ran'); } }\n",
    );
    mkdirSync(join(planted.engineDir, 'node_modules'));
    symlinkSync(planted.evil, join(planted.engineDir, 'node_modules', 'evil'));
    await expect(
      loadCustomEngine(planted.engineDir, { pack: planted.pack, runtime: planted.runtime }),
    ).rejects.toMatchObject({ code: 'ERR_ENGINE_RESOLVE_REFUSED' });
    expect(existsSync(planted.canary)).toBe(false);
  });

  test('a package the engine ships in its own node_modules loads', async () => {
    const planted = plantedState(
      "import { shipped } from 'shipped';\nexport class X { async run(turn) { await turn.emitter.text(shipped); } }\n",
    );
    const own = join(planted.engineDir, 'node_modules', 'shipped');
    mkdirSync(own, { recursive: true });
    writeFileSync(
      join(own, 'package.json'),
      JSON.stringify({ name: 'shipped', type: 'module', exports: './index.js' }),
    );
    writeFileSync(join(own, 'index.js'), "export const shipped = 'from the engine folder';\n");
    const engine = await loadCustomEngine(planted.engineDir, {
      pack: planted.pack,
      runtime: planted.runtime,
    });
    const s = wireSession(engine, planted.runtime);
    expect(textOf((await s.run({ message: 'hi' })).events)).toBe('from the engine folder');
    await s.close();
  });
});
