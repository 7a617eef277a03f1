import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanTemps, fixtures, tempDir, textOf } from './helpers.js';
import {
  copyFixture,
  installPackage,
  loadPackCustomEngine,
  wireSession,
} from './contract-helpers.js';

afterEach(cleanTemps);

const digest = (value: string) => createHash('sha256').update(value).digest('hex').slice(0, 16);
const ROUTING_KEY = 'sk-routing-key-7f3a9c2e11';
const VENDOR_KEY = 'crsr_operator-own-key-5521';

describe('engines shaped like the AgentHippo store engines load and run a turn', () => {
  test('an in-process SDK engine (Cursor style): default model, message suffix, workspace sync, MCP, own vendor key untouched', async () => {
    const pack = copyFixture('contract-sdk');
    const engineDir = join(pack, 'engines', 'sdk-style');
    installPackage(
      engineDir,
      'fake-sdk',
      'let n = 0; export function createClient(key) { n += 1; return { id: `${key}-${n}`, hello: () => "sdk ok" }; }',
    );
    const { engine, runtime } = await loadPackCustomEngine(pack, {
      env: {
        PATH: process.env.PATH ?? '',
        SDKVENDOR_API_KEY: VENDOR_KEY,
        DATA_MCP_URL: 'http://127.0.0.1:7001/mcp',
      },
    });
    expect(engine.displayName).toBe('SDK style');
    const s = wireSession(engine, runtime);
    const { events, outcome } = await s.run({
      message: 'Summarise README.md',
      modelToken: ROUTING_KEY,
      baseUrl: 'http://127.0.0.1:4000/v1',
      sessionId: 'chat-1',
      turnEnv: { DATA_MCP_TOKEN: 'nonce-per-turn-9912' },
    });
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(outcome).toMatchObject({ nativeSessionId: 'sdk-chat-1-1' });
    const seen = JSON.parse(textOf(events));
    expect(seen.sdk).toBe('sdk ok');
    expect(seen.pid).not.toBe(process.pid);
    // model.defaultModel: neither the frame nor the pack names a model.
    expect(seen.modelId).toBe('auto');
    // promptInjection message-suffix: the pack's prompt rides after the message.
    expect(seen.message).toBe(
      'Summarise README.md\n\nYou summarise documents in three bullet points.\n',
    );
    // workspaceSync: rules and skills laid into <workspace>/.sdkstyle/.
    const synced = join(runtime.workspaceRoot, '.sdkstyle');
    expect(seen.rules).toBe('You summarise documents in three bullet points.\n');
    expect(readFileSync(join(synced, 'SDKSTYLE.md'), 'utf8')).toBe(seen.rules);
    expect(seen.skillsDir).toBe(join(synced, 'skills'));
    expect(existsSync(join(synced, 'skills', 'summarise', 'SKILL.md'))).toBe(true);
    // No apiKeyEnvVar: the operator's own vendor key is what the engine sees, in the turn's env
    // and in its process environment; the routing key only travels as routing.apiKey.
    expect(seen.vendorKey).toBe(digest(VENDOR_KEY));
    expect(seen.vendorKeyInProcess).toBe(digest(VENDOR_KEY));
    expect(seen.routingKey).toBe(digest(ROUTING_KEY));
    // homeEnvVar names session.engineHomeDir, a folder under the state dir.
    expect(seen.home).toBe(seen.engineHomeDir);
    expect(seen.engineHomeDir).toBe(join(runtime.stateDir, 'engines', 'sdk-style', 'home'));
    // MCP servers from the pack's configuration, resolved against the turn's environment (the
    // per-turn token is a turnEnv secret: the engine has it, the frames show it redacted).
    expect(seen.mcpAuth).toBe(digest('Bearer nonce-per-turn-9912'));
    expect(seen.mcpServers).toEqual({
      data: {
        description: 'A remote server reached with a per-turn token',
        type: 'http',
        url: 'http://127.0.0.1:7001/mcp',
        headers: { Authorization: 'Bearer [redacted]' },
      },
      local: { command: 'node', args: ['./mcp/local.mjs'], env: { LEVEL: 'debug' } },
    });
    // `files` names FILES_ROOT, which the turn does not have: left out, and said so.
    expect(s.wire()).toContain('MCP servers left out (a variable they name is not set): fil');
    expect(events.filter((e) => e.type === 'tool_start')).toMatchObject([
      { toolCallId: 'r1', name: 'read_rules' },
    ]);
    expect(events.filter((e) => e.type === 'tool_end')).toMatchObject([
      { toolCallId: 'r1', name: 'read_rules', output: 'ok' },
    ]);
    await s.close();
  });

  test('a CLI wrapper (Grok style): the routing key and base URL reach the CLI in the variables the manifest names, and nowhere else', async () => {
    const pack = copyFixture('contract-cli');
    const { engine, runtime, logs } = await loadPackCustomEngine(pack, {
      env: { PATH: process.env.PATH ?? '', CLIVENDOR_API_KEY: 'xai-operator-key-0001' },
    });
    const s = wireSession(engine, runtime);
    const { events, outcome } = await s.run({
      message: 'hello',
      modelToken: ROUTING_KEY,
      baseUrl: 'http://127.0.0.1:4000/v1',
    });
    expect(outcome).toMatchObject({
      type: 'result',
      stopReason: 'end_turn',
      nativeSessionId: 'cli-session-7',
    });
    const seen = JSON.parse(textOf(events));
    expect(seen).toEqual({
      // promptInjection none: the message as sent.
      prompt: 'hello',
      // The pack's spec.model wins over the manifest's defaultModel.
      model: 'pack-model',
      // apiKeyEnvVar is declared: the routing key replaces the operator's value in it.
      key: digest(ROUTING_KEY),
      baseUrl: 'http://127.0.0.1:4000/v1',
      home: join(runtime.stateDir, 'engines', 'cli-style', 'home'),
      cwd: runtime.workspaceRoot,
    });
    // workspaceSync disabled: nothing laid into the workspace.
    expect(existsSync(join(runtime.workspaceRoot, '.clistyle'))).toBe(false);
    // The CLI wrote the key to its stderr and the engine logged it: it reaches no frame, no
    // host diagnostic and no log outside the run.
    const wire = s.wire();
    expect(wire).toContain('debug: using key [redacted]');
    expect(wire).not.toContain(ROUTING_KEY);
    expect(logs.join('\n')).not.toContain(ROUTING_KEY);
    // onMaintenance reaches the engine's own onMaintenance(logger); its log belongs to no run.
    await engine.onMaintenance?.({ reason: 'after_run', runId: 'r' }, runtime);
    expect(logs.join('\n')).toContain('maintenance: nothing cached');
    // A frame naming its own model wins over the pack and the manifest.
    const second = await s.run({ message: 'again', modelId: 'frame-model' });
    expect(JSON.parse(textOf(second.events))).toMatchObject({
      model: 'frame-model',
      // No modelToken on this run: nothing is written, the operator's own value stays.
      key: digest('xai-operator-key-0001'),
      baseUrl: null,
    });
    await s.close();
  });

  test('an installed engine with tags and a home variable (Muse style): default export, rules and skills synced, home kept across turns', async () => {
    const pack = copyFixture('contract-home');
    const { engine, runtime } = await loadPackCustomEngine(join(pack, 'pack'), {
      engineDir: join(pack, 'engines', 'tagged'),
    });
    expect(engine.id).toBe('tagged');
    const s = wireSession(engine, runtime);
    const first = await s.run({ message: 'hi', modelToken: ROUTING_KEY });
    expect(first.outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(JSON.parse(textOf(first.events))).toEqual({
      turns: 1,
      home: join(runtime.stateDir, 'engines', 'tagged', 'home'),
      message: 'hi\n\nYou are terse.\n',
      modelId: 'tagged-1.2',
      keyIsSet: true,
      rules: 'You are terse.\n',
      rulesDir: ['style.md'],
      skills: ['greet'],
      skill: true,
    });
    const second = await s.run({ message: 'hi' });
    expect(JSON.parse(textOf(second.events))).toMatchObject({ turns: 2, keyIsSet: false });
    expect(readFileSync(join(runtime.workspaceRoot, '.tagged', 'rules', 'style.md'), 'utf8')).toBe(
      'Use British spelling.\n',
    );
    await s.close();
  });

  test('the example pack (examples/hello-pack) runs with its V2 manifest', async () => {
    const hello = join(fixtures, '..', '..', '..', '..', 'examples', 'hello-pack');
    const { engine, runtime } = await loadPackCustomEngine(hello, {
      runtime: { workspaceRoot: tempDir(), stateDir: tempDir() },
    });
    const s = wireSession(engine, runtime);
    const { events, outcome } = await s.run({ message: 'hi there' });
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(textOf(events)).toContain('Hello! You said: "hi there".');
    expect(events.map((e) => e.type)).toContain('tool_start');
    expect(readFileSync(join(runtime.workspaceRoot, 'hello.txt'), 'utf8')).toContain('hi there');
    await s.close();
  });
});
