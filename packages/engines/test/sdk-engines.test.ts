import { afterEach, describe, expect, test } from 'vitest';
import {
  EngineError,
  createClaudeEngine,
  createCodexEngine,
  loadPackEngine,
} from '../src/index.js';
import { cleanTemps, tempDir } from './helpers.js';
import { flag, missingSdk, sdkPack, standinTurnSetup } from './sdk-helpers.js';

afterEach(cleanTemps);

// What the claude and codex engines share (src/sdk-engine.ts, src/sdk-turn.ts), on each of them
// against its stand-in CLI.
const ENGINES = [
  {
    engine: 'claude',
    token: 'sk-ant-model-token-4242',
    /** The argv flag a turn's file access shows in, and its value for a read-only turn. */
    readOnly: { flag: '--tools', value: 'Read,Glob,Grep' },
    sdk: '@anthropic-ai/claude-agent-sdk',
    importedFrom: '/app/node_modules/@packwarden/engines/dist/index.js',
    broken: new SyntaxError('Unexpected token'),
    create: createClaudeEngine,
  },
  {
    engine: 'codex',
    token: 'sk-openai-model-token-4242',
    readOnly: { flag: '--sandbox', value: 'read-only' },
    sdk: '@openai/codex-sdk',
    importedFrom: '/app/index.js',
    broken: new Error('boom'),
    create: createCodexEngine,
  },
] as const;

describe.each(ENGINES)('the $engine engine', (cli) => {
  test('a frame cannot widen the pack: write on a read-only pack stays read-only', async () => {
    const { records, s } = await standinTurnSetup(cli.engine, 'text', 'read-only');
    await s.run({ message: 'x', permissions: { fileAccess: 'write' } });
    expect(flag(records()[0]?.argv ?? [], cli.readOnly.flag)).toBe(cli.readOnly.value);
    await s.close();
  });

  test('a crashing CLI fails the turn, and the failure holds no token', async () => {
    const crashed = await standinTurnSetup(cli.engine, 'crash');
    const second = await crashed.s.run({ message: 'x', modelToken: cli.token });
    expect(second).toMatchObject({
      outcome: { type: 'failed', error: { code: `${cli.engine}_failed` } },
    });
    expect(second.outcome.type === 'failed' && second.outcome.error.message).toContain('code 3');
    expect(JSON.stringify(second)).not.toContain(cli.token);
    await crashed.s.close();
  });

  test('the SDK is optional; absent: ERR_ENGINE_SDK_MISSING naming the package to install', async () => {
    const error = await loadPackEngine({
      packDir: tempDir(),
      manifest: sdkPack(cli.engine),
      home: tempDir(),
      [cli.engine]: { loadSdk: missingSdk(cli.sdk, cli.importedFrom) },
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(EngineError);
    expect(error).toMatchObject({ code: 'ERR_ENGINE_SDK_MISSING' });
    expect((error as Error).message).toContain(`npm install ${cli.sdk}`);
  });

  test('the SDK is optional; present but broken: ERR_ENGINE_LOAD', async () => {
    const loadSdk = (): Promise<never> => Promise.reject(cli.broken);
    const error = await cli
      .create({ pack: { id: 'p', version: '1.0.0' }, loadSdk })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'ERR_ENGINE_LOAD' });
    expect((error as Error).message).toContain(cli.broken.message);
  });
});
