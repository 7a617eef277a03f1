import { existsSync } from 'node:fs';
import { afterEach, describe, expect, test } from 'vitest';
import type { ClaudeAgentSdk } from '../src/index.js';
import { alive, cleanTemps, textOf, waitUntil } from './helpers.js';
import { flag, standinTurnSetup, thinkingOf, toolFrames } from './sdk-helpers.js';

afterEach(cleanTemps);

const TOKEN = 'sk-ant-model-token-4242';

describe('the claude engine (Claude Agent SDK against a stand-in Claude Code)', () => {
  test('routing: Claude Code gets the gateway and a placeholder, never the token; text, thinking and the session id', async () => {
    const { engine, runtime, records, s } = await standinTurnSetup(
      'claude',
      'text',
      'workspace-write',
    );
    expect(engine.id).toBe('claude');
    const { events, outcome } = await s.run({
      message: 'hello there',
      baseUrl: 'http://gateway.test:4000/v1',
      modelToken: TOKEN,
      modelId: 'claude-run-model',
      turnEnv: { TURN_VAR: 'turn-value-1' },
    });
    expect(outcome).toMatchObject({
      type: 'result',
      stopReason: 'end_turn',
      nativeSessionId: 'claude-session-1',
    });
    expect(thinkingOf(events)).toBe('Pondering the prompt.');
    // Streamed as deltas; the complete assistant message that follows is not repeated.
    expect(textOf(events)).toBe('You said: hello there');
    expect(events.filter((event) => event.type === 'session')).toEqual([
      expect.objectContaining({ nativeSessionId: 'claude-session-1' }),
    ]);

    const [record, ...more] = records();
    expect(more).toEqual([]);
    // The host-side gateway on loopback, with a per-turn placeholder (engines README).
    expect(record?.env.ANTHROPIC_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(record?.env.ANTHROPIC_API_KEY).toMatch(/^pw-turn-[0-9a-f]{48}$/);
    expect(Object.values(record?.env ?? {}).filter((value) => value.includes(TOKEN))).toEqual([]);
    expect(record?.env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).toBe('1');
    expect(record?.argv.join(' ')).not.toContain(TOKEN);
    expect(record?.env.TURN_VAR).toBe('turn-value-1');
    expect(record?.env.CLAUDE_CONFIG_DIR).toBe(`${runtime.stateDir}/claude`);
    expect(existsSync(`${runtime.stateDir}/claude`)).toBe(true);
    expect(record?.cwd).toBe(runtime.workspaceRoot);
    expect(flag(record?.argv ?? [], '--output-format')).toBe('stream-json');
    expect(flag(record?.argv ?? [], '--input-format')).toBe('stream-json');
    expect(record?.argv).toContain('--include-partial-messages');
    expect(flag(record?.argv ?? [], '--model')).toBe('claude-run-model');
    expect(flag(record?.argv ?? [], '--setting-sources')).toBe('');
    expect(flag(record?.argv ?? [], '--resume')).toBeUndefined();
    await s.close();
  });

  test('permissions: none / read-only / workspace-write / full become path-scoped tools and a permission mode', async () => {
    const { records, runtime, s } = await standinTurnSetup('claude', 'text', 'full');
    const ws = runtime.workspaceRoot;
    for (const fileAccess of ['none', 'read', 'write'] as const) {
      const { outcome } = await s.run({ message: 'x', permissions: { fileAccess } });
      expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    }
    // No permissions on the frame: the pack's declaration (full).
    await s.run({ message: 'x' });
    const seen = records().map(({ argv }) => ({
      tools: flag(argv, '--tools'),
      allowed: flag(argv, '--allowedTools'),
      mode: flag(argv, '--permission-mode'),
      skip: argv.includes('--allow-dangerously-skip-permissions'),
    }));
    expect(seen).toEqual([
      { tools: '', allowed: undefined, mode: 'dontAsk', skip: false },
      {
        tools: 'Read,Glob,Grep',
        allowed: `Read(/${ws}/**),Glob(/${ws}/**),Grep(/${ws}/**)`,
        mode: 'dontAsk',
        skip: false,
      },
      {
        tools: 'Read,Glob,Grep,Edit,Write,NotebookEdit',
        allowed: [
          `Read(/${ws}/**),Glob(/${ws}/**),Grep(/${ws}/**)`,
          `Edit(/${ws}/**),Write(/${ws}/**),NotebookEdit(/${ws}/**)`,
        ].join(','),
        mode: 'dontAsk',
        skip: false,
      },
      { tools: 'default', allowed: undefined, mode: 'bypassPermissions', skip: true },
    ]);
    await s.close();
  });

  test('resume: nativeSessionId becomes --resume and the session id rides the terminal frame', async () => {
    const { records, s } = await standinTurnSetup('claude', 'text');
    const { outcome } = await s.run({ message: 'again', nativeSessionId: 'prev-session-7' });
    expect(outcome).toMatchObject({ type: 'result', nativeSessionId: 'prev-session-7' });
    expect(flag(records()[0]?.argv ?? [], '--resume')).toBe('prev-session-7');
    await s.close();
  });

  test('tool use and tool results become tool_start / tool_end; unstreamed text is sent whole', async () => {
    const { s } = await standinTurnSetup('claude', 'tools');
    const { events, outcome } = await s.run({ message: 'list files' });
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    const tools = toolFrames(events);
    expect(tools).toEqual([
      expect.objectContaining({
        type: 'tool_start',
        toolCallId: 'toolu_1',
        name: 'Glob',
        input: { pattern: '*' },
      }),
      expect.objectContaining({
        type: 'tool_end',
        toolCallId: 'toolu_1',
        name: 'Glob',
        output: 'a.txt\nb.txt',
      }),
      expect.objectContaining({ type: 'tool_start', toolCallId: 'toolu_2', name: 'Read' }),
      expect.objectContaining({
        type: 'tool_end',
        toolCallId: 'toolu_2',
        name: 'Read',
        output: [{ type: 'text', text: 'File does not exist.' }],
        isError: true,
      }),
    ]);
    expect(tools[1]).not.toHaveProperty('isError');
    expect(textOf(events)).toBe('Two files.');
    await s.close();
  });

  test.each([
    ['sleep', 'exits when the SDK closes its stdin', 1500],
    ['stubborn', 'ignores its stdin closing, so the SDK sends SIGTERM', 6000],
  ])(
    'cancel (%s stand-in, which %s): the turn ends cancelled and the process is gone',
    async (scenario, _how, withinMs) => {
      const { records, s } = await standinTurnSetup('claude', scenario);
      const controller = new AbortController();
      let abortedAt = 0;
      const { outcome } = await s.run(
        { message: 'x' },
        {
          signal: controller.signal,
          onEvent: (event) => {
            if (event.type === 'text' && !controller.signal.aborted) {
              abortedAt = Date.now();
              controller.abort();
            }
          },
        },
      );
      const cancelledAt = Date.now();
      // The engine settles on its own, before the host's 2 s grace would end the run for it.
      if (scenario === 'sleep') expect(cancelledAt - abortedAt).toBeLessThan(1500);
      expect(outcome).toMatchObject({ type: 'result', stopReason: 'cancelled' });
      const pid = records()[0]?.pid ?? 0;
      expect(pid).toBeGreaterThan(0);
      expect(await waitUntil(() => !alive(pid), withinMs)).toBe(true);
      expect(Date.now() - cancelledAt).toBeLessThan(withinMs);
      await s.close();
    },
  );

  test('an error result fails the turn', async () => {
    const errored = await standinTurnSetup('claude', 'error');
    const { outcome } = await errored.s.run({ message: 'x', modelToken: TOKEN });
    expect(outcome).toMatchObject({ type: 'failed', error: { code: 'claude_error' } });
    expect(outcome.type === 'failed' && outcome.error.message).toContain('the model is overloaded');
    await errored.s.close();
  });
});

describe('the claude SDK is optional', () => {
  test('the installed SDK fits the shape the engine uses', async () => {
    const sdk: ClaudeAgentSdk = await import('@anthropic-ai/claude-agent-sdk');
    expect(typeof sdk.query).toBe('function');
  });
});
