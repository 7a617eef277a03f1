import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunEvent } from '@packwarden/runner-host';
import { describe, expect, test } from 'vitest';
import { hasToolResult, type ModelReply, type ModelRequest } from './fake-model-server.js';
import { tempDir, textOf } from './helpers.js';
import {
  REAL_TOKEN,
  expectNoCredentialSent,
  filesContaining,
  promptPack,
  realCliSuite,
  realCliTurn,
  recordingWrapper,
  stateDir,
  toolEnds,
  type RealCliTurnOptions,
} from './real-cli-helpers.js';

// Real codex (the SDK's linux-x64 native CLI) against a fake OpenAI Responses server on loopback.
// Verdicts come from host-side evidence: the server's request log, files, the state dir.

realCliSuite('codex');

type Reply = (api: 'anthropic' | 'openai', request: ModelRequest) => ModelReply;

/** A model that runs `cmd` (codex's `exec_command`) once, then answers `done`. */
const command =
  (cmd: (workspace: string) => string, extra: Record<string, unknown> = {}) =>
  (workspace: string): Reply =>
  (_api, request) =>
    hasToolResult('openai', request)
      ? { text: 'done' }
      : { tool: { name: 'exec_command', input: { cmd: cmd(workspace), ...extra } } };

/** A turn of the real codex. */
const codexTurn = (options: RealCliTurnOptions) => realCliTurn('codex', options);

const patchAdding = (path: string, line: string) =>
  `apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: ${path}\n+${line}\n*** End Patch\nEOF\n`;

// Several turns per test, each a real CLI start: more than the shared 30 s under a loaded suite.
describe('the codex engine with the real codex CLI', { timeout: 180_000 }, () => {
  test('a text turn, with the base URL as the server root and as …/v1: one provider of our own, no WebSocket, the real token only at the server', async () => {
    for (const suffix of ['', '/v1', '/v1/']) {
      const { server, runtime, events, outcome } = await codexTurn({
        reply: () => () => ({ text: 'Hello from the fake model' }),
        baseUrlSuffix: suffix,
      });
      expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
      expect(textOf(events)).toBe('Hello from the fake model');
      // Every request is a Responses call on the server root's /v1: no upgrade attempts.
      expect(server.requests.map((request) => `${request.method} ${request.path}`)).toEqual([
        'POST /v1/responses',
      ]);
      expect(server.requests.some((request) => request.headers.upgrade !== undefined)).toBe(false);
      expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${REAL_TOKEN}`);
      expect(filesContaining(runtime.stateDir, REAL_TOKEN)).toEqual([]);
      expect(JSON.stringify(events)).not.toContain(REAL_TOKEN);
    }
  });

  test('a tool turn: a command and a patch inside the workspace land, with tool frames', async () => {
    const { runtime, events, outcome } = await codexTurn({
      reply: (workspace) => (_api, request) => {
        const results = JSON.stringify(request.body?.input ?? []).match(/function_call_output/g);
        if (results === null)
          return {
            tool: { name: 'exec_command', input: { cmd: 'echo from-a-command > made.txt' } },
          };
        if (results.length === 1)
          return {
            tool: {
              name: 'exec_command',
              input: { cmd: patchAdding(join(workspace, 'patched.txt'), 'from a patch') },
            },
          };
        return { text: 'both done' };
      },
    });
    expect(outcome).toMatchObject({ type: 'result' });
    expect(readFileSync(join(runtime.workspaceRoot, 'made.txt'), 'utf8')).toBe('from-a-command\n');
    expect(readFileSync(join(runtime.workspaceRoot, 'patched.txt'), 'utf8')).toBe('from a patch\n');
    expect(toolEnds(events).map((event) => event.name)).toEqual([
      'command_execution',
      'file_change',
    ]);
    expect(textOf(events)).toBe('both done');
  });

  test('workspace-write: a command, a patch and an escalation writing outside the workspace (also under /tmp) are refused, each with a failed tool frame; nothing is written', async () => {
    const outsideDir = stateDir();
    const tmpDir = tempDir();
    const attempts = [
      command(() => `echo escaped > ${join(outsideDir, 'by-command.txt')}`),
      command(() => `echo escaped > ${join(tmpDir, 'by-command-tmp.txt')}`),
      command(() => patchAdding(join(outsideDir, 'by-patch.txt'), 'escaped')),
      command(() => `echo escaped > ${join(outsideDir, 'by-escalation.txt')}`, {
        sandbox_permissions: 'require_escalated',
        justification: 'please',
      }),
    ];
    const ends: RunEvent[][] = [];
    for (const reply of attempts) {
      const { outcome, events } = await codexTurn({ reply });
      expect(outcome).toMatchObject({ type: 'result' });
      ends.push(toolEnds(events));
    }
    // Every attempt shows as a failed tool call, including those codex refused itself (the
    // patch and the escalation never reach its event stream: read from its rollout).
    for (const attempt of ends) {
      expect(attempt).toHaveLength(1);
      expect(attempt[0]).toMatchObject({ isError: true });
    }
    expect(ends[2]?.[0]).toMatchObject({
      name: 'exec_command',
      output: expect.stringMatching(/patch rejected/),
    });
    expect(ends[3]?.[0]).toMatchObject({
      name: 'exec_command',
      output: expect.stringMatching(/approval policy is Never/),
    });
    for (const name of ['by-command.txt', 'by-patch.txt', 'by-escalation.txt'])
      expect(existsSync(join(outsideDir, name))).toBe(false);
    expect(existsSync(join(tmpDir, 'by-command-tmp.txt'))).toBe(false);
  });

  test('a command the model runs prints its environment: no token and no placeholder there, in what the model sees, or on disk', async () => {
    const { server, runtime, outcome } = await codexTurn({
      reply: command(() => 'env > env-dump.txt; env'),
    });
    expect(outcome).toMatchObject({ type: 'result' });
    const dump = readFileSync(join(runtime.workspaceRoot, 'env-dump.txt'), 'utf8');
    expect(dump).toContain('CODEX_HOME=');
    expect(dump).not.toContain(REAL_TOKEN);
    expect(dump).not.toMatch(/pw-turn-[0-9a-f]{48}/);
    const withResult = server.modelRequests().filter((request) => hasToolResult('openai', request));
    expect(withResult).toHaveLength(1);
    expect(withResult[0]?.raw).toContain('CODEX_HOME=');
    expect(withResult[0]?.raw).not.toContain(REAL_TOKEN);
    for (const request of server.modelRequests())
      expect(request.headers.authorization).toBe(`Bearer ${REAL_TOKEN}`);
    expect(filesContaining(runtime.stateDir, REAL_TOKEN)).toEqual([]);
  });

  test("the pack's prompt reaches the model: spec.prompts.system and AGENTS.md are in codex's developer instructions", async () => {
    const pack = promptPack(
      'codex',
      'SYSTEM-PROMPT-MARKER-3141: answer like a pirate.',
      'AGENTS-MD-MARKER-2718: never delete files.',
    );
    const { server, outcome } = await codexTurn({ reply: () => () => ({ text: 'arr' }), pack });
    expect(outcome).toMatchObject({ type: 'result' });
    const [first] = server.modelRequests();
    const developer = JSON.stringify(
      (first?.body?.input as { role?: string }[] | undefined)?.filter(
        (item) => item.role === 'developer',
      ),
    );
    expect(developer).toContain('SYSTEM-PROMPT-MARKER-3141');
    expect(developer).toContain('AGENTS-MD-MARKER-2718');
  });

  test("behind packwarden's walls (a CommandWrapper): codex starts through the wrapper, its commands inherit the wrapped environment, the launcher is gone afterwards", async () => {
    const { wrap, log } = recordingWrapper();
    const { runtime, outcome } = await codexTurn({
      wrap,
      reply: command(() => 'env > env-dump.txt'),
    });
    expect(outcome).toMatchObject({ type: 'result' });
    expect(log()).toHaveLength(1);
    expect(log()[0]).toMatch(/codex$/);
    const dump = readFileSync(join(runtime.workspaceRoot, 'env-dump.txt'), 'utf8');
    expect(dump).toContain('PW_TEST_WRAPPED=1');
    expect(dump).not.toContain(REAL_TOKEN);
    // The launcher is written outside the engine state (which walls make writable), and removed.
    expect(existsSync(join(runtime.stateDir, 'codex-launch'))).toBe(false);
  });

  test('a wrapper that drops the command arguments fails the turn (confinement_failed) before codex starts', async () => {
    const { wrap, log } = recordingWrapper();
    const { server, outcome } = await codexTurn({
      wrap: (given) => ({ ...wrap(given), args: ['-c', 'exit 0'] }),
      reply: () => () => ({ text: 'never' }),
    });
    expect(outcome).toMatchObject({ type: 'failed', error: { code: 'confinement_failed' } });
    expect(server.requests).toEqual([]);
    expect(log()).toEqual([]);
  });

  test('onModelOrigin gets the origin the CLI will call (the gateway, not the server); a refusal fails the turn before codex starts', async () => {
    const origins: string[] = [];
    const { server, outcome } = await codexTurn({
      onModelOrigin: (origin) => origins.push(origin),
      reply: () => () => ({ text: 'ok' }),
    });
    expect(outcome).toMatchObject({ type: 'result' });
    expect(origins).toHaveLength(1);
    expect(origins[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(origins[0]).not.toBe(server.url);
    const refused = await codexTurn({
      onModelOrigin: () => {
        throw new Error('proxy closed');
      },
      reply: () => () => ({ text: 'never' }),
    });
    expect(refused.outcome).toMatchObject({
      type: 'failed',
      error: { code: 'confinement_failed' },
    });
    expect(refused.server.requests).toEqual([]);
  });

  test('a local server without a token: the turn completes, the CLI holds a placeholder, the server gets no credential', async () => {
    const { server, events, outcome } = await codexTurn({
      reply: () => () => ({ text: 'no key needed' }),
      withoutToken: true,
    });
    expect(outcome).toMatchObject({ type: 'result' });
    expect(textOf(events)).toBe('no key needed');
    expectNoCredentialSent(server, '/v1/responses');
  });
});
