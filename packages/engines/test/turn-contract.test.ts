import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { copyFixture, loadPackCustomEngine, wireSession } from './contract-helpers.js';
import { cleanTemps, textOf } from './helpers.js';

afterEach(cleanTemps);

/**
 * The engine checks the turn against the AgentHippo store's `engine-contract.d.ts`
 * (`CustomEngineTurn`, `Emitter`, `Runtime`) field by field, inside its own process, and reports
 * every field that is missing or of the wrong type.
 */
const CHECKER = `
const str = (v) => typeof v === 'string';
const optStr = (v) => v === undefined || typeof v === 'string';
const fn = (v) => typeof v === 'function';
const checks = {
  message: (t) => str(t.message),
  modelId: (t) => str(t.modelId),
  workspaceRoot: (t) => str(t.workspaceRoot),
  additionalDirectories: (t) => Array.isArray(t.additionalDirectories) && t.additionalDirectories.every(str),
  'permissions.fileAccess': (t) => ['read-only', 'workspace-write', 'full'].includes(t.permissions.fileAccess),
  env: (t) => t.env !== null && typeof t.env === 'object' && Object.values(t.env).every(str),
  'routing.useLiteLLM': (t) => typeof t.routing.useLiteLLM === 'boolean',
  'routing.apiKey': (t) => str(t.routing.apiKey),
  'routing.baseUrl': (t) => str(t.routing.baseUrl),
  'routing.openaiBaseUrl': (t) => str(t.routing.openaiBaseUrl),
  'session.key': (t) => str(t.session.key),
  'session.chatSessionId': (t) => str(t.session.chatSessionId),
  'session.contextSessionId': (t) => str(t.session.contextSessionId),
  'session.isEphemeral': (t) => typeof t.session.isEphemeral === 'boolean',
  'session.engineHomeDir': (t) => str(t.session.engineHomeDir),
  'session.engineSessionDir': (t) => str(t.session.engineSessionDir),
  'session.nativeSessionId': (t) => optStr(t.session.nativeSessionId),
  'agent.id': (t) => str(t.agent.id),
  'agent.version': (t) => str(t.agent.version),
  'agent.rulesFilePath': (t) => str(t.agent.rulesFilePath),
  'agent.skillsDir': (t) => str(t.agent.skillsDir),
  'agent.rulesDir': (t) => str(t.agent.rulesDir),
  mcpServers: (t) => t.mcpServers !== null && typeof t.mcpServers === 'object',
  emitter: (t) => ['text', 'thinking', 'toolStart', 'toolEnd', 'progress', 'question', 'error', 'done'].every((m) => fn(t.emitter[m])),
  'runtime.logger': (t) => ['info', 'warn', 'error', 'debug'].every((m) => fn(t.runtime.logger[m])),
  'runtime.invalidateEngineInstance': (t) => fn(t.runtime.invalidateEngineInstance),
  signal: (t) => t.signal instanceof AbortSignal && t.signal.aborted === false,
};
export default class Checker {
  async run(turn) {
    const failed = Object.entries(checks).filter(([, check]) => { try { return !check(turn); } catch { return true; } }).map(([name]) => name);
    await turn.emitter.text(JSON.stringify({
      failed,
      frozen: Object.isFrozen(turn) && Object.isFrozen(turn.session) && Object.isFrozen(turn.routing),
      serialised: Object.keys(JSON.parse(JSON.stringify({ ...turn, signal: undefined }))).sort(),
      values: {
        modelId: turn.modelId,
        fileAccess: turn.permissions.fileAccess,
        session: turn.session,
        agent: turn.agent,
        routing: { ...turn.routing },
      },
    }));
    await turn.emitter.done();
    return { nativeSessionId: 'checked' };
  }
}
`;

test('the turn matches the contract field by field (presence and type)', async () => {
  const pack = copyFixture('contract-home');
  const engineDir = join(pack, 'engines', 'tagged');
  writeFileSync(join(engineDir, 'engine.mjs'), CHECKER);
  const { engine, runtime } = await loadPackCustomEngine(join(pack, 'pack'), { engineDir });
  const s = wireSession(engine, runtime);
  const { events, outcome } = await s.run({
    message: 'check',
    modelToken: 'sk-key-for-the-checker',
    baseUrl: 'http://127.0.0.1:4000',
    sessionId: 'conversation-9',
    nativeSessionId: 'native-3',
    additionalDirectories: ['/data'],
    permissions: { fileAccess: 'read' },
  });
  expect(outcome).toMatchObject({ type: 'result', nativeSessionId: 'checked' });
  const report = JSON.parse(textOf(events));
  expect(report.failed).toEqual([]);
  expect(report.frozen).toBe(true);
  // env and routing.apiKey are not enumerable: serialising the turn shows neither.
  expect(report.serialised).not.toContain('env');
  expect(report.values.routing).toEqual({
    useLiteLLM: true,
    baseUrl: 'http://127.0.0.1:4000',
    openaiBaseUrl: 'http://127.0.0.1:4000',
  });
  expect(report.values).toMatchObject({
    modelId: 'tagged-1.2',
    fileAccess: 'read-only',
    session: {
      key: 'conversation-9',
      chatSessionId: 'conversation-9',
      contextSessionId: 'conversation-9',
      isEphemeral: false,
      nativeSessionId: 'native-3',
      engineHomeDir: join(runtime.stateDir, 'engines', 'tagged', 'home'),
      engineSessionDir: expect.stringMatching(
        new RegExp(`^${runtime.stateDir}/engines/tagged/sessions/[0-9a-f]{32}$`),
      ),
    },
    agent: {
      id: 'contract-home',
      version: '2.1.0',
      rulesFilePath: join(runtime.workspaceRoot, '.tagged', 'AGENTS.md'),
      skillsDir: join(runtime.workspaceRoot, '.tagged', 'skills'),
      rulesDir: join(runtime.workspaceRoot, '.tagged', 'rules'),
    },
  });
  // Without a session id the turn is ephemeral, under the key "default".
  const ephemeral = JSON.parse(
    textOf((await s.run({ message: 'check', modelToken: 'k-123456', baseUrl: 'http://x' })).events),
  );
  expect(ephemeral.values.session).toMatchObject({ key: 'default', isEphemeral: true });
  await s.close();
});
