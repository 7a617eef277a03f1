// Issue 10, "Done when": each engine shaped like the AgentHippo store's (Custom Engine V2
// manifests: an in-process SDK engine, a CLI wrapper with apiKeyEnvVar and openaiBaseUrlEnvVar,
// an installed engine with tags and a home variable) loads and runs a turn in the real
// `packwarden sandbox` process, confined as it runs by default, and the routing key reaches the
// engine and nothing else: no frame, no stderr. The engine-level details of each field are
// tested in packages/engines/test/contract-engines.test.ts, against the same fixtures.
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanTemps, tempDir } from './helpers.js';
import { baseEnv, startSandbox, textOf, type StartedSandbox } from './fixtures/sandbox.js';

afterEach(cleanTemps);

const FIXTURES = new URL('../../../packages/engines/test/fixtures/', import.meta.url).pathname;
const ROUTING_KEY = 'sk-routing-key-cli-7f3a9c2e11';
const digest = (value: string) => createHash('sha256').update(value).digest('hex').slice(0, 16);

function copyFixture(name: string): string {
  const copy = join(realpathSync(tempDir()), name);
  cpSync(join(FIXTURES, name), copy, { recursive: true });
  return copy;
}

/** Every byte the sandbox sent the driver (the events) and wrote to stderr. */
function everythingSeen(sandbox: StartedSandbox, events: unknown[]): string {
  return `${JSON.stringify(events)}\n${sandbox.stderr()}\n${sandbox.protocolErrors.join('\n')}`;
}

async function finish(sandbox: StartedSandbox): Promise<void> {
  await sandbox.client.shutdown();
  expect(await sandbox.exit).toBe(0);
}

describe('engines shaped like the AgentHippo store engines run a turn in packwarden sandbox (issue 10)', () => {
  test('an in-process SDK engine (Cursor style): default model, message suffix, workspace sync, home under the state dir', async () => {
    const pack = copyFixture('contract-sdk');
    const sdk = join(pack, 'engines', 'sdk-style', 'node_modules', 'fake-sdk');
    mkdirSync(sdk, { recursive: true });
    writeFileSync(
      join(sdk, 'package.json'),
      JSON.stringify({ name: 'fake-sdk', version: '1.0.0', type: 'module', exports: './index.js' }),
    );
    writeFileSync(
      join(sdk, 'index.js'),
      'export function createClient(key) { return { id: key, hello: () => "sdk ok" }; }',
    );
    const state = realpathSync(tempDir());
    const sandbox = startSandbox(['--agent', pack, '--state-dir', state]);
    const { events, outcome } = await sandbox.run({
      message: 'Summarise README.md',
      modelToken: ROUTING_KEY,
      baseUrl: 'http://127.0.0.1:4000/v1',
      sessionId: 'chat-1',
    });
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    const seen = JSON.parse(textOf(events)) as Record<string, unknown>;
    expect(seen.sdk).toBe('sdk ok');
    expect(seen.modelId).toBe('auto');
    expect(seen.message).toBe(
      'Summarise README.md\n\nYou summarise documents in three bullet points.\n',
    );
    // The engine ran out of the sandbox process, with the routing key as routing.apiKey.
    expect(seen.routingKey).toBe(digest(ROUTING_KEY));
    expect(seen.home).toBe(seen.engineHomeDir);
    expect(String(seen.engineHomeDir).startsWith(`${state}/`)).toBe(true);
    const workspace = join(state, 'workspace');
    expect(readFileSync(join(workspace, '.sdkstyle', 'SDKSTYLE.md'), 'utf8')).toBe(
      'You summarise documents in three bullet points.\n',
    );
    expect(existsSync(join(workspace, '.sdkstyle', 'skills', 'summarise', 'SKILL.md'))).toBe(true);
    expect(everythingSeen(sandbox, events)).not.toContain(ROUTING_KEY);
    await finish(sandbox);
  });

  test('a CLI wrapper (Grok style): the routing key and base URL reach the CLI in the variables its manifest names, and nowhere else', async () => {
    const pack = copyFixture('contract-cli');
    const state = realpathSync(tempDir());
    // The operator's own value of the variable never reaches the sandbox: the engine
    // environment is an allow-list (docs/sandbox.md), so only the routing key can be there.
    const sandbox = startSandbox(['--agent', pack, '--state-dir', state], {
      ...baseEnv(),
      CLIVENDOR_API_KEY: 'xai-operator-key-0001',
    });
    const { events, outcome } = await sandbox.run({
      message: 'hello',
      modelToken: ROUTING_KEY,
      baseUrl: 'http://127.0.0.1:4000/v1',
    });
    expect(outcome).toMatchObject({
      type: 'result',
      stopReason: 'end_turn',
      nativeSessionId: 'cli-session-7',
    });
    const seen = JSON.parse(textOf(events)) as Record<string, unknown>;
    expect(seen).toMatchObject({
      prompt: 'hello',
      model: 'pack-model',
      key: digest(ROUTING_KEY),
      baseUrl: 'http://127.0.0.1:4000/v1',
      cwd: join(state, 'workspace'),
    });
    expect(String(seen.home).startsWith(`${state}/`)).toBe(true);
    // The fake CLI prints the key on its stderr and the engine logs it: redacted everywhere.
    const all = everythingSeen(sandbox, events);
    expect(all).toContain('[redacted]');
    expect(all).not.toContain(ROUTING_KEY);
    expect(all).not.toContain('xai-operator-key-0001');
    await finish(sandbox);
  });

  test('an installed engine with tags and a home variable (Muse style), found in --engine-home', async () => {
    const fixture = copyFixture('contract-home');
    const home = realpathSync(tempDir());
    mkdirSync(join(home, 'engines', 'tagged', '1.2.0'), { recursive: true });
    cpSync(join(fixture, 'engines', 'tagged'), join(home, 'engines', 'tagged', '1.2.0'), {
      recursive: true,
    });
    writeFileSync(join(home, 'engines', 'tagged', 'current.txt'), '1.2.0\n');
    const state = realpathSync(tempDir());
    const sandbox = startSandbox([
      '--agent',
      join(fixture, 'pack'),
      '--state-dir',
      state,
      '--engine-home',
      home,
    ]);
    const first = await sandbox.run({ message: 'hi', modelToken: ROUTING_KEY });
    expect(first.outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(JSON.parse(textOf(first.events))).toMatchObject({
      turns: 1,
      message: 'hi\n\nYou are terse.\n',
      modelId: 'tagged-1.2',
      keyIsSet: true,
      rules: 'You are terse.\n',
      skills: ['greet'],
    });
    const second = await sandbox.run({ message: 'hi' });
    expect(JSON.parse(textOf(second.events))).toMatchObject({ turns: 2, keyIsSet: false });
    expect(everythingSeen(sandbox, [...first.events, ...second.events])).not.toContain(ROUTING_KEY);
    await finish(sandbox);
  });
});
