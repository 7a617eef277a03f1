import { cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadPackManifest } from '@packwarden/pack-manifest';
import { afterEach, describe, expect, test } from 'vitest';
import type { EngineError } from '../src/index.js';
import { loadCustomEngine, loadCustomEngineManifest, loadPackEngine } from '../src/index.js';
import { cleanTemps, fixtures, session, tempDir, textOf } from './helpers.js';

afterEach(cleanTemps);

const probePack = join(fixtures, 'probe');

async function probe(workspaceRoot = tempDir()) {
  const { manifest } = loadPackManifest(probePack);
  const engine = await loadPackEngine({ packDir: probePack, manifest, home: tempDir() });
  return { engine, runtime: { workspaceRoot, stateDir: tempDir() } };
}

describe('custom engines (AgentHippo Custom Engine V2)', () => {
  test('the turn carries message, model, workspace, permissions, env, routing, session, agent, prompt', async () => {
    const { engine, runtime } = await probe();
    expect(engine.id).toBe('probe');
    expect(engine.displayName).toBe('Probe engine');
    const s = session(engine, runtime);
    const { events, outcome } = await s.run({
      message: 'report',
      workspaceRoot: '/somewhere/else',
      additionalDirectories: ['/data'],
      baseUrl: 'http://127.0.0.1:9/v1',
      modelToken: 'tok-secret-123456',
      turnEnv: { API_KEY: 'env-secret-abcdef' },
      sessionId: 's-1',
      nativeSessionId: 'resume-me',
      permissions: { fileAccess: 'read' },
    });
    const seen = JSON.parse(textOf(events));
    expect(seen).toMatchObject({
      instance: expect.any(Number),
      initHasKey: true,
      modelId: 'pack-model',
      workspaceRoot: runtime.workspaceRoot,
      additionalDirectories: ['/data'],
      permissions: { fileAccess: 'read-only' },
      envKeys: ['API_KEY'],
      envHidden: true,
      routing: { useLiteLLM: true, baseUrl: 'http://127.0.0.1:9/v1', keyLength: 17 },
      session: { sessionId: 's-1', nativeSessionId: 'resume-me' },
      agent: { id: 'probe', version: '1.2.3' },
      systemPrompt: 'You are the probe.\n',
    });
    // The key is on the turn but not enumerable: spreading the routing does not carry it.
    expect(seen.routing).not.toHaveProperty('apiKey');
    expect(outcome).toMatchObject({
      type: 'result',
      stopReason: 'end_turn',
      nativeSessionId: 'probe-native-1',
    });
    await s.close();
  });

  test('every emitter method becomes its frame; done() reports the session id', async () => {
    const { engine, runtime } = await probe();
    const s = session(engine, runtime);
    const { events, outcome } = await s.run(
      { message: 'all-events', modelId: 'run-model' },
      { onQuestion: (q) => ({ selected: [q.options?.[0] ?? ''] }) },
    );
    expect(events.map((e) => e.type)).toEqual([
      'accepted',
      'thinking',
      'tool_start',
      'tool_end',
      'progress',
      'warning',
      'question',
      'question_resolved',
      'text',
      'session',
      'result',
    ]);
    expect(textOf(events)).toBe('answer:{"outcome":"answered","selected":["yes"]}');
    expect(outcome).toMatchObject({ type: 'result', nativeSessionId: 'from-done' });
    await s.close();
  });

  test('emitter.error() and a thrown error end the turn with failed and their codes', async () => {
    const { engine, runtime } = await probe();
    const s = session(engine, runtime);
    const reported = await s.run({ message: 'emit-error' });
    expect(reported.outcome).toMatchObject({
      type: 'failed',
      error: { code: 'probe_failed', message: 'it went wrong', retryable: true },
    });
    const thrown = await s.run({ message: 'throw' });
    expect(thrown.outcome).toMatchObject({
      type: 'failed',
      error: { code: 'probe_thrown', message: 'thrown by the probe', retryable: false },
    });
    await s.close();
  });

  test('the instance is rebuilt when baseUrl or modelToken change, and only then', async () => {
    const { engine, runtime } = await probe();
    const s = session(engine, runtime);
    const instanceOf = async (request: { baseUrl?: string; modelToken?: string }) =>
      JSON.parse(textOf((await s.run({ message: 'report', ...request })).events))
        .instance as number;
    const first = await instanceOf({ baseUrl: 'http://a', modelToken: 'token-one-1' });
    expect(await instanceOf({ baseUrl: 'http://a', modelToken: 'token-one-1' })).toBe(first);
    expect(await instanceOf({ baseUrl: 'http://a', modelToken: 'token-two-2' })).toBe(first + 1);
    expect(await instanceOf({ baseUrl: 'http://b', modelToken: 'token-two-2' })).toBe(first + 2);
    expect(await instanceOf({ baseUrl: 'http://b', modelToken: 'token-two-2' })).toBe(first + 2);
    await s.close();
  });

  test('a cancelled turn ends with result{cancelled}', async () => {
    const { engine, runtime } = await probe();
    const s = session(engine, runtime);
    const controller = new AbortController();
    const run = s.run(
      { message: 'wait' },
      {
        signal: controller.signal,
      },
    );
    setTimeout(() => controller.abort(), 50);
    expect((await run).outcome).toMatchObject({ type: 'result', stopReason: 'cancelled' });
    await s.close();
  });
});

describe('engine.manifest.json', () => {
  function engineDir(manifest: unknown, files: Record<string, string> = {}): string {
    const dir = join(tempDir(), 'engine');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'engine.manifest.json'),
      typeof manifest === 'string' ? manifest : JSON.stringify(manifest),
    );
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return dir;
  }
  const valid = { version: 2, id: 'e', entry: 'e.mjs', engineExport: 'E' };
  const code = async (dir: string) =>
    loadCustomEngineManifest(dir).then(
      () => 'ok',
      (error: EngineError) => error.code,
    );

  test('accepts a V2 manifest and keeps unknown fields', async () => {
    const dir = engineDir({ ...valid, workspaceSync: true, future: 1 }, { 'e.mjs': '' });
    const loaded = await loadCustomEngineManifest(dir);
    expect(loaded.manifest).toMatchObject({ id: 'e', workspaceSync: true, future: 1 });
  });

  test.each([
    ['version 1', { ...valid, version: 1 }, 'ERR_ENGINE_MANIFEST_INVALID'],
    ['no engineExport', { version: 2, id: 'e', entry: 'e.mjs' }, 'ERR_ENGINE_MANIFEST_INVALID'],
    ['a bad id', { ...valid, id: 'Bad Id' }, 'ERR_ENGINE_MANIFEST_INVALID'],
    ['not JSON', '{version: 2', 'ERR_ENGINE_MANIFEST_INVALID'],
    ['an entry outside', { ...valid, entry: '../e.mjs' }, 'ERR_ENGINE_ENTRY_INVALID'],
    ['an absolute entry', { ...valid, entry: '/etc/passwd' }, 'ERR_ENGINE_ENTRY_INVALID'],
    ['a missing entry', { ...valid, entry: 'missing.mjs' }, 'ERR_ENGINE_ENTRY_INVALID'],
    ['a non-module entry', { ...valid, entry: 'e.json' }, 'ERR_ENGINE_ENTRY_INVALID'],
  ])('refuses %s', async (_name, manifest, expected) => {
    const dir = engineDir(manifest, { 'e.mjs': '', 'e.json': '{}' });
    expect(await code(dir)).toBe(expected);
  });

  test('refuses a manifest over 64 KiB and an entry symlinked out of the folder', async () => {
    expect(await code(engineDir(`${' '.repeat(70_000)}{}`))).toBe('ERR_ENGINE_MANIFEST_INVALID');
    const outside = join(tempDir(), 'outside.mjs');
    writeFileSync(outside, 'export class E { run() {} }');
    const dir = engineDir(valid);
    symlinkSync(outside, join(dir, 'e.mjs'));
    expect(await code(dir)).toBe('ERR_ENGINE_ENTRY_INVALID');
  });

  test('refuses a module without the exported class, or a class without run()', async () => {
    const pack = { id: 'p', version: '1.0.0' };
    const missing = engineDir(valid, { 'e.mjs': 'export class Other { run() {} }' });
    await expect(loadCustomEngine(missing, { pack })).rejects.toMatchObject({
      code: 'ERR_ENGINE_LOAD',
    });
    const noRun = engineDir(valid, { 'e.mjs': 'export class E { go() {} }' });
    await expect(loadCustomEngine(noRun, { pack })).rejects.toMatchObject({
      code: 'ERR_ENGINE_LOAD',
    });
    const broken = engineDir(valid, { 'e.mjs': 'export class E { run() {' });
    await expect(loadCustomEngine(broken, { pack })).rejects.toMatchObject({
      code: 'ERR_ENGINE_LOAD',
    });
    const ok = engineDir(valid, { 'e.mjs': 'export class E { run() {} }' });
    await expect(loadCustomEngine(ok, { pack })).resolves.toMatchObject({ id: 'e' });
  });

  test('copies of the probe pack load from wherever they are', async () => {
    const copy = join(tempDir(), 'probe');
    cpSync(probePack, copy, { recursive: true });
    const { manifest } = loadPackManifest(copy);
    const engine = await loadPackEngine({ packDir: copy, manifest, home: tempDir() });
    expect(engine.id).toBe('probe');
  });
});
