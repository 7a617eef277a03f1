import { existsSync } from 'node:fs';
import { afterEach, describe, expect, test } from 'vitest';
import type { CodexSdk } from '../src/index.js';
import { alive, cleanTemps, textOf, waitUntil } from './helpers.js';
import { flag, standinTurnSetup, thinkingOf, toolFrames } from './sdk-helpers.js';

afterEach(cleanTemps);

const TOKEN = 'sk-openai-model-token-4242';

/** The `--config key=value` overrides of an argv. */
const configs = (argv: readonly string[]) =>
  argv.flatMap((arg, i) => (argv[i - 1] === '--config' ? [arg] : []));

describe('the codex engine (Codex SDK against a stand-in codex CLI)', () => {
  test('routing: a provider of our own on the gateway, a placeholder in its env_key, never the token; text, reasoning and the thread id', async () => {
    const { engine, runtime, records, s } = await standinTurnSetup(
      'codex',
      'text',
      'workspace-write',
    );
    expect(engine.id).toBe('codex');
    const { events, outcome } = await s.run({
      message: 'hello there',
      baseUrl: 'http://gateway.test:4000/v1',
      modelToken: TOKEN,
      turnEnv: { TURN_VAR: 'turn-value-1' },
      additionalDirectories: ['/data/extra'],
    });
    expect(outcome).toMatchObject({
      type: 'result',
      stopReason: 'end_turn',
      nativeSessionId: 'codex-thread-1',
    });
    expect(thinkingOf(events)).toBe('Pondering the prompt.');
    // item.started / item.updated / item.completed carry the text so far: sent once, as deltas.
    expect(textOf(events)).toBe('You said: hello there');
    expect(events.filter((event) => event.type === 'text').length).toBeGreaterThan(1);
    expect(events.filter((event) => event.type === 'session')).toEqual([
      expect.objectContaining({ nativeSessionId: 'codex-thread-1' }),
    ]);

    const [record, ...more] = records();
    expect(more).toEqual([]);
    const argv = record?.argv ?? [];
    expect(argv.slice(0, 2)).toEqual(['exec', '--experimental-json']);
    const config = configs(argv);
    expect(config).toContain('model_provider="packwarden"');
    const baseUrl = config.find((entry) =>
      entry.startsWith('model_providers.packwarden.base_url='),
    );
    expect(baseUrl).toMatch(
      /^model_providers\.packwarden\.base_url="http:\/\/127\.0\.0\.1:\d+\/v1"$/,
    );
    expect(config).toContain('model_providers.packwarden.wire_api="responses"');
    expect(config).toContain('model_providers.packwarden.supports_websockets=false');
    expect(config).toContain('model_providers.packwarden.env_key="PACKWARDEN_MODEL_KEY"');
    expect(config.some((entry) => entry.startsWith('openai_base_url'))).toBe(false);
    expect(config).toContain('approval_policy="never"');
    expect(record?.env.PACKWARDEN_MODEL_KEY).toMatch(/^pw-turn-[0-9a-f]{48}$/);
    expect(record?.env.CODEX_API_KEY).toBeUndefined();
    expect(Object.values(record?.env ?? {}).filter((value) => value.includes(TOKEN))).toEqual([]);
    expect(argv.join(' ')).not.toContain(TOKEN);
    expect(record?.env.TURN_VAR).toBe('turn-value-1');
    expect(record?.env.CODEX_HOME).toBe(`${runtime.stateDir}/codex`);
    expect(existsSync(`${runtime.stateDir}/codex`)).toBe(true);
    expect(flag(argv, '--cd')).toBe(runtime.workspaceRoot);
    expect(flag(argv, '--add-dir')).toBe('/data/extra');
    expect(flag(argv, '--model')).toBe('pack-model');
    expect(argv).toContain('--skip-git-repo-check');
    expect(argv).not.toContain('resume');
    await s.close();
  });

  test('permissions: read-only / workspace-write / full become --sandbox; none is refused', async () => {
    const { records, s } = await standinTurnSetup('codex', 'text', 'full');
    for (const fileAccess of ['read', 'write'] as const) {
      const { outcome } = await s.run({ message: 'x', permissions: { fileAccess } });
      expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    }
    await s.run({ message: 'x' }); // the pack's declaration: full
    expect(records().map(({ argv }) => flag(argv, '--sandbox'))).toEqual([
      'read-only',
      'workspace-write',
      'danger-full-access',
    ]);
    const { outcome } = await s.run({ message: 'x', permissions: { fileAccess: 'none' } });
    expect(outcome).toMatchObject({ type: 'failed', error: { code: 'file_access_unsupported' } });
    expect(records()).toHaveLength(3); // never started
    await s.close();
  });

  test('resume: nativeSessionId resumes the thread and rides the terminal frame', async () => {
    const { records, s } = await standinTurnSetup('codex', 'text');
    const { outcome } = await s.run({ message: 'again', nativeSessionId: 'thread-prev-7' });
    expect(outcome).toMatchObject({ type: 'result', nativeSessionId: 'thread-prev-7' });
    const argv = records()[0]?.argv ?? [];
    expect(argv.slice(-2)).toEqual(['resume', 'thread-prev-7']);
    await s.close();
  });

  test('command executions and file changes become tool_start / tool_end', async () => {
    const { s } = await standinTurnSetup('codex', 'tools');
    const { events, outcome } = await s.run({ message: 'list files' });
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    const tools = toolFrames(events);
    expect(tools).toEqual([
      expect.objectContaining({
        type: 'tool_start',
        toolCallId: 'item_0',
        name: 'command_execution',
        input: { command: 'ls' },
      }),
      expect.objectContaining({
        type: 'tool_end',
        toolCallId: 'item_0',
        output: { exitCode: 0, output: 'a.txt\nb.txt\n' },
      }),
      expect.objectContaining({
        type: 'tool_start',
        toolCallId: 'item_1',
        input: { command: 'cat missing' },
      }),
      expect.objectContaining({ type: 'tool_end', toolCallId: 'item_1', isError: true }),
      expect.objectContaining({ type: 'tool_start', toolCallId: 'item_2', name: 'file_change' }),
      expect.objectContaining({
        type: 'tool_end',
        toolCallId: 'item_2',
        name: 'file_change',
        output: { changes: [{ path: 'notes.md', kind: 'add' }] },
      }),
    ]);
    expect(tools[1]).not.toHaveProperty('isError');
    expect(textOf(events)).toBe('Two files.');
    await s.close();
  });

  test('cancel aborts runStreamed: the turn ends cancelled and the codex process is gone', async () => {
    const { records, s } = await standinTurnSetup('codex', 'sleep');
    const controller = new AbortController();
    const started = Date.now();
    const { outcome } = await s.run(
      { message: 'x' },
      {
        signal: controller.signal,
        onEvent: (event) => event.type === 'text' && controller.abort(),
      },
    );
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'cancelled' });
    expect(Date.now() - started).toBeLessThan(10_000);
    const pid = records()[0]?.pid ?? 0;
    expect(pid).toBeGreaterThan(0);
    expect(await waitUntil(() => !alive(pid))).toBe(true);
    await s.close();
  });

  test('turn.failed fails the turn', async () => {
    const failed = await standinTurnSetup('codex', 'error');
    const { events, outcome } = await failed.s.run({ message: 'x', modelToken: TOKEN });
    expect(outcome).toMatchObject({ type: 'failed', error: { code: 'codex_turn_failed' } });
    expect(outcome.type === 'failed' && outcome.error.message).toContain('the model is overloaded');
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'warning', code: 'codex_error' }),
    );
    await failed.s.close();
  });
});

describe('the codex SDK is optional', () => {
  test('the installed SDK fits the shape the engine uses', async () => {
    const sdk: CodexSdk = await import('@openai/codex-sdk');
    expect(typeof sdk.Codex).toBe('function');
  });
});
