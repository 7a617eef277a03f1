import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { loadPackEngine } from '../src/index.js';
import { hasToolResult, type ModelReply, type ModelRequest } from './fake-model-server.js';
import { session, tempDir, textOf } from './helpers.js';
import {
  REAL_TOKEN,
  expectNoCredentialSent,
  fakeModelServer,
  filesContaining,
  promptPack,
  realCliSuite,
  realCliTurn,
  recordingWrapper,
  stateDir,
  toolEnds,
  type RealCliTurnOptions,
} from './real-cli-helpers.js';

// Real Claude Code (the SDK's linux-x64 native CLI) against a fake Anthropic Messages server on
// loopback. Verdicts come from host-side evidence: the server's request log, files, the state dir.

realCliSuite('claude');

/** A model that calls `tool` once, then answers `done` in text. */
const oneTool =
  (name: string, input: Record<string, unknown>) =>
  (_api: 'anthropic' | 'openai', request: ModelRequest): ModelReply =>
    hasToolResult('anthropic', request) ? { text: 'done' } : { tool: { name, input } };

/** A turn of the real Claude Code; its model's script does not need the workspace. */
const claudeTurn = (
  options: Omit<RealCliTurnOptions, 'reply'> & {
    reply: (api: 'anthropic' | 'openai', request: ModelRequest) => ModelReply;
  },
) => realCliTurn('claude', { ...options, reply: () => options.reply });

// Several turns per test, each a real CLI start: more than the shared 30 s under a loaded suite.
describe('the claude engine with the real Claude Code CLI', { timeout: 180_000 }, () => {
  test('a text turn, with the base URL as the server root and as …/v1: the real token reaches the server, the CLI only ever held a placeholder', async () => {
    for (const suffix of ['', '/v1', '/v1/']) {
      const { server, runtime, events, outcome } = await claudeTurn({
        reply: () => ({ text: 'Hello from the fake model' }),
        baseUrlSuffix: suffix,
      });
      expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
      expect(textOf(events)).toBe('Hello from the fake model');
      const model = server.modelRequests();
      expect(model.length).toBeGreaterThan(0);
      // Non-essential traffic is off with a base URL: the model's requests are all there is.
      expect(server.requests.map((request) => `${request.method} ${request.path}`)).toEqual(
        model.map(() => 'POST /v1/messages'),
      );
      for (const request of model) expect(request.headers['x-api-key']).toBe(REAL_TOKEN);
      // Nothing left on disk, nothing in a frame.
      expect(filesContaining(runtime.stateDir, REAL_TOKEN)).toEqual([]);
      expect(JSON.stringify(events)).not.toContain(REAL_TOKEN);
    }
  });

  test('a tool turn: Write inside the workspace lands, with tool_start / tool_end', async () => {
    const { events, outcome, runtime } = await claudeTurn({
      // The workspace is only known once the turn is set up: write relative to it.
      reply: (_api, request) =>
        hasToolResult('anthropic', request)
          ? { text: 'written' }
          : {
              tool: {
                name: 'Write',
                input: {
                  file_path: workspaceFile(request, 'notes.txt'),
                  content: 'inside the workspace',
                },
              },
            },
    });
    expect(outcome).toMatchObject({ type: 'result' });
    const file = join(runtime.workspaceRoot, 'notes.txt');
    expect(readFileSync(file, 'utf8')).toBe('inside the workspace');
    expect(events.some((event) => event.type === 'tool_start' && event.name === 'Write')).toBe(
      true,
    );
    expect(toolEnds(events)).toEqual([expect.objectContaining({ name: 'Write' })]);
    expect(toolEnds(events)[0]?.isError).toBeUndefined();
    expect(textOf(events)).toBe('written');
  });

  test('workspace-write: a Write to an absolute path outside the workspace is refused and nothing is written', async () => {
    const outside = join(tempDir(), 'escaped.txt');
    const { events, outcome } = await claudeTurn({
      reply: oneTool('Write', { file_path: outside, content: 'escaped' }),
    });
    expect(outcome).toMatchObject({ type: 'result' });
    expect(existsSync(outside)).toBe(false);
    expect(toolEnds(events)).toEqual([expect.objectContaining({ name: 'Write', isError: true })]);
  });

  test('workspace-write and read-only: reading a file outside the workspace is refused; its text never reaches the model', async () => {
    const canaryDir = tempDir();
    const canary = join(canaryDir, 'host-secret.txt');
    writeFileSync(canary, 'HOST-CANARY-52817');
    for (const fileAccess of ['workspace-write', 'read-only'] as const) {
      for (const [name, input] of [
        ['Read', { file_path: canary }],
        ['Grep', { pattern: 'HOST-CANARY', path: canaryDir }],
        ['Glob', { pattern: '*.txt', path: canaryDir }],
      ] as const) {
        const { server, events } = await claudeTurn({ reply: oneTool(name, input), fileAccess });
        expect(toolEnds(events)).toEqual([expect.objectContaining({ name, isError: true })]);
        for (const request of server.modelRequests()) {
          expect(request.raw).not.toContain('HOST-CANARY-52817');
        }
      }
    }
  });

  test("the pack's prompt reaches the model: spec.prompts.system and AGENTS.md are in the system prompt Claude Code sends", async () => {
    const pack = promptPack(
      'claude',
      'SYSTEM-PROMPT-MARKER-3141: answer like a pirate.',
      'AGENTS-MD-MARKER-2718: never delete files.',
    );
    const { server, outcome } = await claudeTurn({ reply: () => ({ text: 'arr' }), pack });
    expect(outcome).toMatchObject({ type: 'result' });
    const [first] = server.modelRequests();
    const system = JSON.stringify(first?.body?.system);
    expect(system).toContain('SYSTEM-PROMPT-MARKER-3141');
    expect(system).toContain('AGENTS-MD-MARKER-2718');
  });

  test("through loadPackEngine (what the sandbox calls), the pack's prompt reaches the model too", async () => {
    const pack = promptPack('claude', 'SYSTEM-VIA-LOADER-1618', 'AGENTS-VIA-LOADER-1414');
    const server = await fakeModelServer(() => ({ text: 'ok' }));
    const engine = await loadPackEngine({
      ...pack,
      home: tempDir(),
      env: { PATH: process.env.PATH, HOME: tempDir() },
    });
    const s = session(engine, { workspaceRoot: tempDir(), stateDir: stateDir() });
    const { outcome } = await s.run({ message: 'hi', baseUrl: server.url, modelToken: REAL_TOKEN });
    await s.close();
    expect(outcome).toMatchObject({ type: 'result' });
    const system = JSON.stringify(server.modelRequests()[0]?.body?.system);
    expect(system).toContain('SYSTEM-VIA-LOADER-1618');
    expect(system).toContain('AGENTS-VIA-LOADER-1414');
  });

  test('a command the model runs (full access) prints its environment: no token there, in the tool result sent to the model, or on disk; an echoed token is scrubbed', async () => {
    let turn = 0;
    const { server, runtime, events, outcome } = await claudeTurn({
      fileAccess: 'full',
      reply: (_api, request) => {
        if (!hasToolResult('anthropic', request)) {
          turn += 1;
          return {
            tool: {
              name: 'Bash',
              input: { command: 'env > env-dump.txt; env', description: 'print the environment' },
            },
          };
        }
        // A hostile or careless server echoes the credential it received.
        return { text: `echo: ${String(request.headers['x-api-key'])}` };
      },
    });
    expect(turn).toBe(1);
    expect(outcome).toMatchObject({ type: 'result' });
    const dump = readFileSync(join(runtime.workspaceRoot, 'env-dump.txt'), 'utf8');
    expect(dump).toMatch(/^ANTHROPIC_API_KEY=pw-turn-[0-9a-f]{48}$/m);
    expect(dump).toMatch(/^CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1$/m);
    // bypassPermissions as root needs IS_SANDBOX=1, or Claude Code refuses to start.
    if (process.getuid?.() === 0) expect(dump).toMatch(/^IS_SANDBOX=1$/m);
    expect(dump).not.toContain(REAL_TOKEN);
    const withResult = server
      .modelRequests()
      .filter((request) => hasToolResult('anthropic', request));
    expect(withResult.length).toBeGreaterThan(0);
    for (const request of withResult) {
      expect(request.raw).toContain('ANTHROPIC_BASE_URL=http://127.0.0.1:');
      // The real token is in the header the gateway set, never in what Claude Code sent.
      expect(request.raw).not.toContain(REAL_TOKEN);
      expect(request.headers['x-api-key']).toBe(REAL_TOKEN);
    }
    // The echo reached Claude Code as the placeholder, so the transcript holds no token.
    expect(textOf(events)).toMatch(/^echo: pw-turn-[0-9a-f]{48}$/);
    expect(filesContaining(runtime.stateDir, REAL_TOKEN)).toEqual([]);
    expect(filesContaining(runtime.workspaceRoot, REAL_TOKEN)).toEqual([]);
  });

  test("behind packwarden's walls (a CommandWrapper that enforces writes): Claude Code starts through the wrapper, and workspace-write runs shell commands in the workspace", async () => {
    const { wrap, log } = recordingWrapper();
    const { runtime, events, outcome } = await claudeTurn({
      wrap,
      confinedWrites: true,
      reply: oneTool('Bash', {
        command: 'pwd > where.txt; env > env-dump.txt',
        description: 'where',
      }),
    });
    expect(outcome).toMatchObject({ type: 'result' });
    expect(log()).toHaveLength(1);
    expect(log()[0]).toMatch(/claude/);
    expect(readFileSync(join(runtime.workspaceRoot, 'where.txt'), 'utf8').trim()).toBe(
      runtime.workspaceRoot,
    );
    const dump = readFileSync(join(runtime.workspaceRoot, 'env-dump.txt'), 'utf8');
    expect(dump).toContain('PW_TEST_WRAPPED=1');
    expect(dump).not.toContain(REAL_TOKEN);
    expect(toolEnds(events)).toEqual([expect.objectContaining({ name: 'Bash' })]);
    expect(toolEnds(events)[0]?.isError).toBeUndefined();
  });

  test('without walls that enforce writes, workspace-write offers no shell: a Bash call is refused and runs nothing', async () => {
    for (const wrap of [undefined, recordingWrapper().wrap]) {
      const { runtime, events } = await claudeTurn({
        ...(wrap !== undefined ? { wrap } : {}),
        reply: oneTool('Bash', { command: 'touch ran.txt', description: 'try' }),
      });
      expect(existsSync(join(runtime.workspaceRoot, 'ran.txt'))).toBe(false);
      expect(toolEnds(events)).toEqual([expect.objectContaining({ name: 'Bash', isError: true })]);
    }
  });

  test('a local server without a token: the turn completes, the CLI holds a placeholder, the server gets no credential', async () => {
    const { server, events, outcome } = await claudeTurn({
      reply: () => ({ text: 'no key needed' }),
      withoutToken: true,
    });
    expect(outcome).toMatchObject({ type: 'result' });
    expect(textOf(events)).toBe('no key needed');
    expectNoCredentialSent(server, '/v1/messages');
  });
});

/** `name` in the workspace Claude Code reports in its prompt ("Primary working directory: …"). */
function workspaceFile(request: ModelRequest, name: string): string {
  const match = /Primary working directory: ([^\s\\]+)/.exec(request.raw);
  if (match?.[1] === undefined) throw new Error('Claude Code named no working directory');
  return join(match[1], name);
}
