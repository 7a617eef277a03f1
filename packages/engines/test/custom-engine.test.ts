import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadPackManifest } from '@packwarden/pack-manifest';
import { afterEach, describe, expect, test } from 'vitest';
import type { EngineError } from '../src/index.js';
import { loadCustomEngine, loadCustomEngineManifest, loadPackEngine } from '../src/index.js';
import { loadPackCustomEngine, wireSession } from './contract-helpers.js';
import { cleanTemps, fixtures, tempDir, textOf } from './helpers.js';

afterEach(cleanTemps);

const probePack = join(fixtures, 'probe');

async function probe(options: { killGraceMs?: number } = {}) {
  const { engine, runtime } = await loadPackCustomEngine(probePack, options);
  return { engine, runtime, s: wireSession(engine, runtime) };
}

describe('custom engines (AgentHippo Custom Engine V2), out of process', () => {
  test('the turn carries message, model, workspace, permissions, env, routing, session, agent', async () => {
    const { s, runtime } = await probe();
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
      initHasKey: true,
      // promptInjection message-suffix: the pack's system prompt follows the message.
      message: 'report\n\nYou are the probe.\n',
      modelId: 'pack-model',
      workspaceRoot: runtime.workspaceRoot,
      cwd: runtime.workspaceRoot,
      additionalDirectories: ['/data'],
      permissions: { fileAccess: 'read-only' },
      envHidden: true,
      turnEnv: true,
      routing: {
        useLiteLLM: true,
        baseUrl: 'http://127.0.0.1:9/v1',
        openaiBaseUrl: 'http://127.0.0.1:9/v1',
        keyLength: 17,
      },
      session: {
        key: 's-1',
        chatSessionId: 's-1',
        contextSessionId: 's-1',
        isEphemeral: false,
        sessionId: 's-1',
        nativeSessionId: 'resume-me',
      },
      agent: { id: 'probe', version: '1.2.3' },
    });
    // The engine runs in its own process, and the key is on the turn but not enumerable.
    expect(seen.pid).not.toBe(process.pid);
    expect(seen.routing).not.toHaveProperty('apiKey');
    expect(outcome).toMatchObject({
      type: 'result',
      stopReason: 'end_turn',
      nativeSessionId: 'probe-native-1',
    });
    await s.close();
  });

  test('every emitter method, positional (the contract) or object form, becomes its frame', async () => {
    const { s } = await probe();
    const { events, outcome } = await s.run(
      { message: 'all-events', modelId: 'run-model' },
      { onQuestion: (q) => ({ selected: [q.options?.[0] ?? ''] }) },
    );
    expect(events.map((e) => e.type)).toEqual([
      'accepted',
      'thinking',
      'tool_start',
      'tool_end',
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
    expect(events.filter((e) => e.type === 'tool_start')).toMatchObject([
      { toolCallId: 't1', name: 'look', input: { a: 1 } },
      { toolCallId: 't2', name: 'peek', input: { b: 2 } },
    ]);
    expect(events.filter((e) => e.type === 'tool_end')).toMatchObject([
      { toolCallId: 't1', name: 'look', output: 'seen' },
      { toolCallId: 't2', name: 'peek', output: 'peeked', isError: true },
    ]);
    expect(events.find((e) => e.type === 'question')).toMatchObject({
      prompt: 'go?',
      options: ['yes', 'no'],
    });
    expect(JSON.parse(textOf(events).slice('answer:'.length))).toEqual({
      outcome: 'answered',
      selected: ['yes'],
      freeText: null,
      declined: false,
      timedOut: false,
      cancelled: false,
    });
    expect(outcome).toMatchObject({ type: 'result', nativeSessionId: 'from-done' });
    await s.close();
  });

  test('emitter.error() is non-fatal when done() follows; without done() it fails the turn; a throw fails it', async () => {
    const { s } = await probe();
    const recovered = await s.run({ message: 'error-then-done' });
    expect(recovered.outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(recovered.events.find((e) => e.type === 'warning')).toMatchObject({
      code: 'engine_error',
      message: 'a hiccup the engine recovered from',
    });
    const reported = await s.run({ message: 'error-no-done' });
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
    const { s } = await probe();
    const instanceOf = async (request: { baseUrl?: string; modelToken?: string }) =>
      JSON.parse(textOf((await s.run({ message: 'report', ...request })).events)) as {
        instance: number;
        pid: number;
      };
    const first = await instanceOf({ baseUrl: 'http://a', modelToken: 'token-one-1' });
    expect((await instanceOf({ baseUrl: 'http://a', modelToken: 'token-one-1' })).instance).toBe(
      first.instance,
    );
    expect((await instanceOf({ baseUrl: 'http://a', modelToken: 'token-two-2' })).instance).toBe(
      first.instance + 1,
    );
    const third = await instanceOf({ baseUrl: 'http://b', modelToken: 'token-two-2' });
    expect(third.instance).toBe(first.instance + 2);
    expect(third.pid).toBe(first.pid);
    await s.close();
  });

  test('a cancelled turn ends with result{cancelled}; an engine ignoring the signal is killed', async () => {
    const { s } = await probe({ killGraceMs: 200 });
    const controller = new AbortController();
    const run = s.run(
      { message: 'wait' },
      {
        signal: controller.signal,
        onEvent: (event) => {
          if (event.type === 'text') controller.abort();
        },
      },
    );
    expect((await run).outcome).toMatchObject({ type: 'result', stopReason: 'cancelled' });
    const before = Number(textOf((await s.run({ message: 'pid' })).events));
    const stubborn = new AbortController();
    const ignored = await s.run(
      { message: 'ignore-cancel' },
      {
        signal: stubborn.signal,
        onEvent: (event) => {
          if (event.type === 'text') stubborn.abort();
        },
      },
    );
    expect(ignored.outcome).toMatchObject({ type: 'result', stopReason: 'cancelled' });
    const after = Number(textOf((await s.run({ message: 'pid' })).events));
    expect(after).not.toBe(before);
    expect(() => process.kill(before, 0)).toThrow();
    await s.close();
  });

  test('an engine process that dies mid-turn fails the turn; the next turn gets a fresh process', async () => {
    const { s } = await probe();
    const before = Number(textOf((await s.run({ message: 'pid' })).events));
    const crashed = await s.run({ message: 'crash' });
    expect(crashed.outcome).toMatchObject({
      type: 'failed',
      error: { code: 'engine_process_failed' },
    });
    const after = Number(textOf((await s.run({ message: 'pid' })).events));
    expect(after).not.toBe(before);
    await s.close();
  });

  test('invalidateEngineInstance() retires the process after the turn', async () => {
    const { s } = await probe();
    const first = Number(textOf((await s.run({ message: 'invalidate' })).events));
    const second = Number(textOf((await s.run({ message: 'pid' })).events));
    expect(second).not.toBe(first);
    const third = Number(textOf((await s.run({ message: 'pid' })).events));
    expect(third).toBe(second);
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
  const runtime = () => ({ workspaceRoot: tempDir(), stateDir: tempDir() });

  test('accepts a store-shaped V2 manifest and keeps unknown and _comment keys', async () => {
    const dir = engineDir(
      {
        ...valid,
        workspaceSync: { enabled: true, dir: '.e', rulesFile: 'E.md' },
        promptInjection: { mode: 'message-suffix' },
        model: { defaultModel: 'm', apiKeyEnvVar: 'E_KEY', openaiBaseUrlEnvVar: 'E_URL' },
        _comment_model: 'why',
        future: 1,
      },
      { 'e.mjs': '' },
    );
    const loaded = await loadCustomEngineManifest(dir);
    expect(loaded.manifest).toMatchObject({ id: 'e', _comment_model: 'why', future: 1 });
  });

  test.each([
    ['version 1', { ...valid, version: 1 }, 'ERR_ENGINE_MANIFEST_INVALID'],
    ['a bad id', { ...valid, id: 'Bad Id' }, 'ERR_ENGINE_MANIFEST_INVALID'],
    ['not JSON', '{version: 2', 'ERR_ENGINE_MANIFEST_INVALID'],
    [
      'the old boolean workspaceSync',
      { ...valid, workspaceSync: true },
      'ERR_ENGINE_MANIFEST_INVALID',
    ],
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

  test('reads engine.manifest.json only as a regular file: a symlink, a FIFO and nothing are refused', async () => {
    const real = engineDir(valid, { 'e.mjs': '' });
    const linked = engineDir(valid, { 'e.mjs': '' });
    rmSync(join(linked, 'engine.manifest.json'));
    symlinkSync(join(real, 'engine.manifest.json'), join(linked, 'engine.manifest.json'));
    const fifo = engineDir(valid, { 'e.mjs': '' });
    rmSync(join(fifo, 'engine.manifest.json'));
    execFileSync('mkfifo', [join(fifo, 'engine.manifest.json')]);
    const missing = engineDir(valid, { 'e.mjs': '' });
    rmSync(join(missing, 'engine.manifest.json'));
    expect(await code(real)).toBe('ok');
    for (const dir of [linked, fifo, missing]) {
      await expect(loadCustomEngineManifest(dir)).rejects.toMatchObject({
        code: 'ERR_ENGINE_MANIFEST_INVALID',
        message: expect.stringContaining(join(dir, 'engine.manifest.json')),
      });
    }
    await expect(loadCustomEngineManifest(linked)).rejects.toThrow(/not a regular file/);
  });

  test('refuses a module without the exported class, a class without run(), a broken module', async () => {
    const pack = { id: 'p', version: '1.0.0' };
    for (const source of [
      'export class Other { run() {} }',
      'export class E { go() {} }',
      'export class E { run() {',
    ]) {
      const dir = engineDir(valid, { 'e.mjs': source });
      await expect(loadCustomEngine(dir, { pack, runtime: runtime() })).rejects.toMatchObject({
        code: 'ERR_ENGINE_LOAD',
      });
    }
    const thrower = engineDir(valid, { 'e.mjs': 'throw new Error("top-level boom")' });
    await expect(loadCustomEngine(thrower, { pack, runtime: runtime() })).rejects.toMatchObject({
      code: 'ERR_ENGINE_LOAD',
      message: expect.stringContaining('top-level boom'),
    });
    const ok = engineDir(valid, { 'e.mjs': 'export class E { run() {} }' });
    const engine = await loadCustomEngine(ok, { pack, runtime: runtime() });
    expect(engine).toMatchObject({ id: 'e' });
    await engine.dispose?.();
  });

  test('without a runtime the process starts at the first turn, and a broken module fails that turn', async () => {
    const pack = { id: 'p', version: '1.0.0' };
    const dir = engineDir(valid, { 'e.mjs': 'export class Other { run() {} }' });
    const engine = await loadCustomEngine(dir, { pack });
    const s = wireSession(engine, runtime());
    expect((await s.run({ message: 'hi' })).outcome).toMatchObject({
      type: 'failed',
      error: { code: 'engine_load_failed' },
    });
    await s.close();
  });

  test('copies of the probe pack load from wherever they are (through loadPackEngine)', async () => {
    const copy = join(tempDir(), 'probe');
    cpSync(probePack, copy, { recursive: true });
    const { manifest } = loadPackManifest(copy);
    const engine = await loadPackEngine({ packDir: copy, manifest, home: tempDir() });
    expect(engine.id).toBe('probe');
    const s = wireSession(engine, runtime());
    expect(textOf((await s.run({ message: 'hello' })).events)).toBe('echo:hello');
    await s.close();
  });
});
