import { cpSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parsePackManifest } from '@packwarden/pack-manifest';
import { afterEach, describe, expect, test } from 'vitest';
import { EngineError, findInstalledEngine, loadPackEngine } from '../src/index.js';
import { cleanTemps, fixtures, tempDir } from './helpers.js';

afterEach(cleanTemps);

function manifest(spec: string) {
  return parsePackManifest(
    `apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: p, version: 1.0.0}\nspec:\n${spec}\n`,
  );
}

function customEngine(root: string, id: string, label: string): void {
  const dir = join(root, 'engines', id);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'engine.manifest.json'),
    JSON.stringify({ version: 2, id, entry: 'e.mjs', engineExport: 'E', displayName: label }),
  );
  writeFileSync(join(dir, 'e.mjs'), 'export class E { run() {} }');
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: EngineError) => error,
  );

describe('loadPackEngine resolution', () => {
  test('<pack>/engines/<id> first, then $PACKWARDEN_HOME/engines/<id>', async () => {
    const pack = tempDir();
    const home = tempDir();
    customEngine(home, 'mine', 'from home');
    const m = manifest('  engine: mine');
    expect((await loadPackEngine({ packDir: pack, manifest: m, home })).displayName).toBe(
      'from home',
    );
    customEngine(pack, 'mine', 'from the pack');
    expect((await loadPackEngine({ packDir: pack, manifest: m, home })).displayName).toBe(
      'from the pack',
    );
  });

  test('a built-in engine can never be shadowed: engines/exec/ in the pack or in home is not loaded', async () => {
    const pack = tempDir();
    const home = tempDir();
    const m = manifest('  engine: exec\n  exec: {command: [sh, -c, "true"]}');
    customEngine(pack, 'exec', 'custom exec');
    customEngine(home, 'exec', 'installed exec');
    const seen: string[] = [];
    const engine = await loadPackEngine({
      packDir: pack,
      manifest: m,
      home,
      admit: (source) => void seen.push(source.kind),
    });
    expect(engine.displayName).toBe('exec: sh');
    expect(seen).toEqual(['built-in']);
  });

  test('admit sees where a custom engine comes from before it loads, and can refuse it', async () => {
    const pack = tempDir();
    const home = tempDir();
    customEngine(home, 'ghost', 'installed ghost');
    const refusal = new Error('refused by the embedder');
    const seen: unknown[] = [];
    const refused = await failure(
      loadPackEngine({
        packDir: pack,
        manifest: manifest('  engine: ghost'),
        home,
        admit: (source) => {
          seen.push(source);
          throw refusal;
        },
      }),
    );
    expect(refused).toBe(refusal);
    expect(seen).toEqual([
      { kind: 'installed', id: 'ghost', folder: join(home, 'engines', 'ghost') },
    ]);
  });

  test('an engine installed from a store: <home>/engines/<id>/<current.txt>/, and admit may redirect the load', async () => {
    const pack = tempDir();
    const home = tempDir();
    customEngine(join(home, 'engines', 'kept'), '1.2.0', 'v1.2.0');
    customEngine(join(home, 'engines', 'kept'), '1.0.0', 'v1.0.0');
    // customEngine writes <root>/engines/<id>: lay the versions out as the installer does.
    for (const version of ['1.2.0', '1.0.0']) {
      cpSync(
        join(home, 'engines', 'kept', 'engines', version),
        join(home, 'engines', 'kept', version),
        { recursive: true },
      );
      writeFileSync(
        join(home, 'engines', 'kept', version, 'engine.manifest.json'),
        JSON.stringify({
          version: 2,
          id: 'kept',
          entry: 'e.mjs',
          engineExport: 'E',
          displayName: `v${version}`,
        }),
      );
    }
    writeFileSync(join(home, 'engines', 'kept', 'current.txt'), '1.2.0\n');
    const m = manifest('  engine: kept');
    const seen: unknown[] = [];
    const engine = await loadPackEngine({
      packDir: pack,
      manifest: m,
      home,
      admit: (s) => void seen.push(s),
    });
    expect(engine.displayName).toBe('v1.2.0');
    expect(seen).toEqual([
      {
        kind: 'installed',
        id: 'kept',
        folder: join(home, 'engines', 'kept', '1.2.0'),
        version: '1.2.0',
      },
    ]);
    // admit answers another folder: that one loads.
    const redirected = await loadPackEngine({
      packDir: pack,
      manifest: m,
      home,
      admit: () => ({ folder: join(home, 'engines', 'kept', '1.0.0') }),
    });
    expect(redirected.displayName).toBe('v1.0.0');
    // current.txt naming no version (a path) is never followed.
    writeFileSync(join(home, 'engines', 'kept', 'current.txt'), '../../elsewhere\n');
    expect((await failure(loadPackEngine({ packDir: pack, manifest: m, home })))?.code).toBe(
      'ERR_ENGINE_NOT_FOUND',
    );
    // Nor is a current.txt that is a symlink, even to a file naming a version that is there.
    const named = join(tempDir(), 'current.txt');
    writeFileSync(named, '1.2.0\n');
    rmSync(join(home, 'engines', 'kept', 'current.txt'));
    symlinkSync(named, join(home, 'engines', 'kept', 'current.txt'));
    expect((await failure(loadPackEngine({ packDir: pack, manifest: m, home })))?.code).toBe(
      'ERR_ENGINE_NOT_FOUND',
    );
  });

  test('findInstalledEngine: the folder the loader takes, and nothing for a name that is not an engine id', async () => {
    const home = tempDir();
    expect(await findInstalledEngine(home, 'mine')).toBeUndefined();
    customEngine(join(home, 'engines', 'mine'), '1.0.0', 'versioned');
    // engines/mine/engines/1.0.0 is not a version folder: move it where installs put it.
    cpSync(
      join(home, 'engines', 'mine', 'engines', '1.0.0'),
      join(home, 'engines', 'mine', '1.0.0'),
      {
        recursive: true,
      },
    );
    writeFileSync(join(home, 'engines', 'mine', 'current.txt'), '1.0.0\n');
    expect(await findInstalledEngine(home, 'mine')).toEqual({
      kind: 'installed',
      id: 'mine',
      folder: join(home, 'engines', 'mine', '1.0.0'),
      version: '1.0.0',
    });
    // An engine at engines/<id>/ itself comes first, as in loadPackEngine.
    customEngine(home, 'mine', 'unversioned');
    expect(await findInstalledEngine(home, 'mine')).toEqual({
      kind: 'installed',
      id: 'mine',
      folder: join(home, 'engines', 'mine'),
    });
    // Not engine ids: nothing outside <home>/engines/ is looked at, though an engine is there.
    const other = join(home, 'other-home');
    expect(join(other, 'engines', '../../engines/mine')).toBe(join(home, 'engines', 'mine'));
    for (const id of ['../../engines/mine', '.hidden', 'a/b', '', 'UPPER'])
      expect(await findInstalledEngine(other, id)).toBeUndefined();
  });

  test('unknown ids, missing spec.engine and an id mismatch are clear errors', async () => {
    const pack = tempDir();
    const unknown = await failure(
      loadPackEngine({ packDir: pack, manifest: manifest('  engine: nope'), home: tempDir() }),
    );
    expect(unknown).toBeInstanceOf(EngineError);
    expect(unknown).toMatchObject({ code: 'ERR_ENGINE_NOT_FOUND' });
    expect(unknown?.message).toContain(join(pack, 'engines', 'nope'));
    const none = await failure(
      loadPackEngine({ packDir: pack, manifest: manifest('  model: x'), home: tempDir() }),
    );
    expect(none).toMatchObject({ code: 'ERR_ENGINE_NOT_SPECIFIED' });
    customEngine(pack, 'other', 'x');
    cpSync(join(pack, 'engines', 'other'), join(pack, 'engines', 'renamed'), { recursive: true });
    const mismatch = await failure(
      loadPackEngine({ packDir: pack, manifest: manifest('  engine: renamed'), home: tempDir() }),
    );
    expect(mismatch).toMatchObject({ code: 'ERR_ENGINE_MANIFEST_INVALID' });
  });

  test.each([
    ['claude', 'Claude Code (@anthropic-ai/claude-agent-sdk)'],
    ['codex', 'Codex (@openai/codex-sdk)'],
  ])('%s is built in, on its installed SDK', async (id, displayName) => {
    const engine = await loadPackEngine({
      packDir: tempDir(),
      manifest: manifest(`  engine: ${id}`),
      home: tempDir(),
    });
    expect(engine).toMatchObject({ id, displayName });
  });

  test('an SDK is imported only when a pack uses its engine', async () => {
    const imported: string[] = [];
    const never = (name: string) => () => {
      imported.push(name);
      return Promise.reject(new Error('not now'));
    };
    const engine = await loadPackEngine({
      packDir: tempDir(),
      manifest: manifest('  engine: exec\n  exec: {command: [sh, -c, "true"]}'),
      home: tempDir(),
      claude: { loadSdk: never('claude') },
      codex: { loadSdk: never('codex') },
    });
    expect(engine.id).toBe('exec');
    expect(imported).toEqual([]);
  });

  test('exec needs a valid spec.exec whose program stays inside the pack', async () => {
    const load = (spec: string) =>
      failure(loadPackEngine({ packDir: tempDir(), manifest: manifest(spec), home: tempDir() }));
    expect(await load('  engine: exec')).toMatchObject({ code: 'ERR_EXEC_SPEC_INVALID' });
    expect(await load('  engine: exec\n  exec: {command: []}')).toMatchObject({
      code: 'ERR_EXEC_SPEC_INVALID',
    });
    expect(await load('  engine: exec\n  exec: {command: [../outside.sh]}')).toMatchObject({
      code: 'ERR_EXEC_SPEC_INVALID',
    });
    expect(await load('  engine: exec\n  exec: {command: [x], env: {"A-B": "1"}}')).toMatchObject({
      code: 'ERR_EXEC_SPEC_INVALID',
    });
  });

  test('the example pack loads its hello engine', async () => {
    const { loadPackManifest } = await import('@packwarden/pack-manifest');
    const example = new URL('../../../examples/hello-pack/', import.meta.url).pathname;
    const engine = await loadPackEngine({
      packDir: example,
      manifest: loadPackManifest(example).manifest,
      home: tempDir(),
    });
    expect(engine.id).toBe('hello');
    expect(fixtures).toBeTruthy();
  });
});
