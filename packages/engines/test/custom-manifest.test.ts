import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  EngineError,
  CUSTOM_ENGINE_MANIFEST_LIMITS,
  isWritableEnvName,
  parseCustomEngineManifest,
} from '../src/index.js';

const valid = { version: 2, id: 'e', entry: './engine.mjs', engineExport: 'E' };
const codeOf = (value: unknown): string => {
  try {
    parseCustomEngineManifest(typeof value === 'string' ? value : JSON.stringify(value));
    return 'ok';
  } catch (error) {
    if (error instanceof EngineError) return error.code;
    throw error;
  }
};

describe('hostile engine manifests are refused with ERR_ENGINE_MANIFEST_INVALID', () => {
  const nest = (depth: number): unknown => (depth === 0 ? 1 : { a: nest(depth - 1) });
  test.each([
    ['apiKeyEnvVar PATH', { model: { apiKeyEnvVar: 'PATH' } }],
    ['apiKeyEnvVar NODE_OPTIONS', { model: { apiKeyEnvVar: 'NODE_OPTIONS' } }],
    ['openaiBaseUrlEnvVar LD_PRELOAD', { model: { openaiBaseUrlEnvVar: 'LD_PRELOAD' } }],
    ['homeEnvVar HOME', { homeEnvVar: 'HOME' }],
    ['homeEnvVar https_proxy', { homeEnvVar: 'https_proxy' }],
    ['a PACKWARDEN_ variable', { model: { apiKeyEnvVar: 'PACKWARDEN_MODEL_TOKEN' } }],
    ['a variable name with "="', { model: { apiKeyEnvVar: 'A=B' } }],
    ['a variable name with a newline', { homeEnvVar: 'A\nB' }],
    [
      'the key and the home in one variable',
      { homeEnvVar: 'X_HOME', model: { apiKeyEnvVar: 'X_HOME' } },
    ],
    ['a sync dir leaving the workspace', { workspaceSync: { enabled: true, dir: '../up' } }],
    ['an absolute sync dir', { workspaceSync: { enabled: true, dir: '/etc' } }],
    ['a sync dir into .git', { workspaceSync: { enabled: true, dir: '.git/hooks' } }],
    ['a sync dir into .GIT', { workspaceSync: { enabled: true, dir: 'sub/.GIT' } }],
    [
      'a sync dir into .packwarden',
      { workspaceSync: { enabled: true, dir: '.packwarden/agents' } },
    ],
    ['a sync dir with a backslash', { workspaceSync: { enabled: true, dir: 'a\\..\\b' } }],
    ['a sync dir 5 levels deep', { workspaceSync: { enabled: true, dir: 'a/b/c/d/e' } }],
    ['an empty sync dir segment', { workspaceSync: { enabled: true, dir: 'a//b' } }],
    [
      'a rules file with a folder',
      { workspaceSync: { enabled: true, dir: '.x', rulesFile: '../R.md' } },
    ],
    ['a rules file ".."', { workspaceSync: { enabled: true, dir: '.x', rulesFile: '..' } }],
    [
      'an unknown workspaceSync key',
      { workspaceSync: { enabled: true, dir: '.x', followLinks: true } },
    ],
    ['an unknown prompt mode', { promptInjection: { mode: 'system-prompt' } }],
    ['the old boolean promptInjection', { promptInjection: true }],
    ['the old string model', { model: 'gpt' }],
    ['an export that is not a name', { engineExport: 'E; process.exit()' }],
    ['nesting 9 levels deep', { _comment: nest(CUSTOM_ENGINE_MANIFEST_LIMITS.maxDepth) }],
    [
      '1100 keys',
      { extra: Object.fromEntries(Array.from({ length: 1100 }, (_, i) => [`k${i}`, i])) },
    ],
    ['65 tags', { tags: Array.from({ length: 65 }, (_, i) => `t${i}`) }],
  ])('%s', (_name, patch) => {
    expect(codeOf({ ...valid, ...patch })).toBe('ERR_ENGINE_MANIFEST_INVALID');
  });

  // `null` is also fuzz/regressions/engine-manifest/f072cbec3bf88418.json (a time-bound finding
  // of the first, cold parse; the target now warms up and bounds at 1 s).
  test('a document over 64 KiB, an array, null and invalid JSON', () => {
    expect(codeOf({ ...valid, _comment: 'x'.repeat(70_000) })).toBe('ERR_ENGINE_MANIFEST_INVALID');
    expect(codeOf('[]')).toBe('ERR_ENGINE_MANIFEST_INVALID');
    expect(codeOf('null')).toBe('ERR_ENGINE_MANIFEST_INVALID');
    expect(codeOf('{"version": 2,')).toBe('ERR_ENGINE_MANIFEST_INVALID');
  });

  test('the store engines’ manifests are accepted, _comment and unknown keys kept', () => {
    const grok = {
      version: 2,
      id: 'grok',
      displayName: 'Grok',
      description: 'xAI Grok Build CLI agent engine',
      entry: './engine.mjs',
      engineExport: 'GrokCliEngine',
      homeEnvVar: 'GROK_HOME',
      workspaceSync: {
        enabled: true,
        dir: '.grok',
        rulesFile: 'GROK.md',
        includeSkills: true,
        includeRules: true,
      },
      promptInjection: { mode: 'message-suffix' },
      model: {
        defaultModel: 'grok-build',
        apiKeyEnvVar: 'XAI_API_KEY',
        openaiBaseUrlEnvVar: 'GROK_MODELS_BASE_URL',
      },
      _comment_model: 'why there is no key',
      futureField: { anything: [1, 2] },
    };
    expect(parseCustomEngineManifest(JSON.stringify(grok))).toEqual(grok);
  });
});

describe('property: any document gives a manifest or a typed refusal, never anything else', () => {
  const envNames = fc.oneof(
    fc.constantFrom('PATH', 'NODE_OPTIONS', 'LD_PRELOAD', 'XAI_API_KEY', 'A', '', 'a b', 'Ü'),
    fc.string({ maxLength: 12 }),
  );
  const paths = fc.oneof(
    fc.constantFrom('.cursor', '../x', '/abs', '.git', 'a/./b', 'a/../b', '.packwarden', 'C:\\x'),
    fc.string({ maxLength: 20 }),
  );
  const manifestLike = fc.record(
    {
      version: fc.oneof(fc.constant(2), fc.anything()),
      id: fc.oneof(fc.constant('e'), fc.string({ maxLength: 70 })),
      entry: fc.oneof(fc.constant('./e.mjs'), paths),
      engineExport: fc.oneof(fc.constant('E'), fc.string({ maxLength: 10 }), fc.anything()),
      homeEnvVar: envNames,
      tags: fc.array(fc.string({ maxLength: 5 }), { maxLength: 70 }),
      workspaceSync: fc.oneof(
        fc.record({
          enabled: fc.boolean(),
          dir: paths,
          rulesFile: paths,
          includeSkills: fc.boolean(),
        }),
        fc.anything(),
      ),
      promptInjection: fc.oneof(
        fc.record({ mode: fc.constantFrom('message-suffix', 'none', 'x') }),
        fc.anything(),
      ),
      model: fc.oneof(
        fc.record({
          defaultModel: fc.string(),
          apiKeyEnvVar: envNames,
          openaiBaseUrlEnvVar: envNames,
        }),
        fc.anything(),
      ),
      _comment: fc.anything({ maxDepth: 12 }),
    },
    { requiredKeys: [] },
  );

  test('structured hostile manifests', () => {
    fc.assert(
      fc.property(manifestLike, (document) => {
        let text: string;
        try {
          text = JSON.stringify(document) ?? 'null';
        } catch {
          return; // not representable as JSON (a BigInt): nothing a file could hold
        }
        let manifest;
        try {
          manifest = parseCustomEngineManifest(text);
        } catch (error) {
          expect(error).toBeInstanceOf(EngineError);
          expect((error as EngineError).code).toBe('ERR_ENGINE_MANIFEST_INVALID');
          return;
        }
        // What is accepted keeps the promises the host relies on.
        for (const name of [
          manifest.homeEnvVar,
          manifest.model?.apiKeyEnvVar,
          manifest.model?.openaiBaseUrlEnvVar,
        ])
          if (name !== undefined) expect(isWritableEnvName(name)).toBe(true);
        const dir = manifest.workspaceSync?.dir;
        if (dir !== undefined) {
          expect(dir.startsWith('/')).toBe(false);
          expect(dir.split('/')).not.toContain('..');
          expect(dir.toLowerCase().split('/')).not.toContain('.git');
        }
      }),
      { numRuns: 500 },
    );
  });

  test('arbitrary text', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.json(),
          fc.jsonValue().map((v) => JSON.stringify(v)),
        ),
        (text) => {
          try {
            parseCustomEngineManifest(text);
          } catch (error) {
            expect((error as EngineError).code).toBe('ERR_ENGINE_MANIFEST_INVALID');
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
