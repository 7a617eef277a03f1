// The custom engine manifest parser (issue 10): mutated store-shaped manifests and arbitrary
// JSON. Promises checked (packages/engines/README.md "The manifest"):
// - parseCustomEngineManifest returns a manifest or throws EngineError ERR_ENGINE_MANIFEST_INVALID,
//   nothing else, within a time bound;
// - an accepted manifest only names variables the host may write and sync folders that stay
//   relative, out of `.git` and `.packwarden`.
import { performance } from 'node:perf_hooks';
import {
  EngineError,
  isWritableEnvName,
  parseCustomEngineManifest,
} from '../../packages/engines/dist/index.js';

// Generous for a loaded 2-core machine; the first parse compiles the schema, so warm up once.
const TIME_BOUND_MS = 1000;
try {
  parseCustomEngineManifest('{}');
} catch {
  // expected: warming up only
}

const STORE_SHAPED = {
  version: 2,
  id: 'grok',
  displayName: 'Grok',
  description: 'A CLI engine',
  tags: ['engine', 'cli'],
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
  _comment_model: 'commentary',
};
const BASE = JSON.stringify(STORE_SHAPED);

const HOSTILE_VALUES = [
  'PATH',
  'NODE_OPTIONS',
  'LD_PRELOAD',
  '../../etc',
  '/etc/passwd',
  '.git/hooks',
  '.packwarden',
  'a\\b',
  '',
  '\u0000',
  'GROK_HOME',
];

export const target = {
  name: 'engine-manifest',
  arbitrary: (fc) =>
    fc.oneof(
      fc.jsonValue({ maxDepth: 12 }).map((value) => JSON.stringify(value)),
      fc
        .tuple(
          fc.array(
            fc.record({
              at: fc.nat(),
              insert: fc.oneof(
                fc.constantFrom(...HOSTILE_VALUES.map((v) => JSON.stringify(v))),
                fc.string({ maxLength: 8 }),
              ),
              remove: fc.nat({ max: 8 }),
            }),
            { maxLength: 6 },
          ),
        )
        .map(([edits]) => {
          let text = BASE;
          for (const { at, insert, remove } of edits) {
            const i = at % (text.length + 1);
            text = text.slice(0, i) + insert + text.slice(i + remove);
          }
          return text;
        }),
      fc
        .record({
          field: fc.constantFrom('homeEnvVar', 'entry', 'engineExport', 'id'),
          value: fc.constantFrom(...HOSTILE_VALUES),
          syncDir: fc.constantFrom(...HOSTILE_VALUES),
          keyVar: fc.constantFrom(...HOSTILE_VALUES),
        })
        .map(({ field, value, syncDir, keyVar }) =>
          JSON.stringify({
            ...STORE_SHAPED,
            [field]: value,
            workspaceSync: { ...STORE_SHAPED.workspaceSync, dir: syncDir },
            model: { ...STORE_SHAPED.model, apiKeyEnvVar: keyVar },
          }),
        ),
    ),
  async check(text) {
    const started = performance.now();
    let manifest;
    let refusal;
    try {
      manifest = parseCustomEngineManifest(text);
    } catch (error) {
      refusal = error;
    }
    const took = performance.now() - started;
    if (took > TIME_BOUND_MS) throw new Error(`parsing took ${took.toFixed(0)} ms`);
    if (refusal !== undefined) {
      if (!(refusal instanceof EngineError) || refusal.code !== 'ERR_ENGINE_MANIFEST_INVALID')
        throw new Error(`untyped refusal: ${refusal?.name} ${refusal?.code}`, { cause: refusal });
      return;
    }
    const names = [
      manifest.homeEnvVar,
      manifest.model?.apiKeyEnvVar,
      manifest.model?.baseUrlEnvVar,
      manifest.model?.openaiBaseUrlEnvVar,
    ].filter((name) => name !== undefined);
    for (const name of names)
      if (!isWritableEnvName(name)) throw new Error(`accepted a reserved variable ${name}`);
    if (new Set(names).size !== names.length) throw new Error('accepted one variable twice');
    const dir = manifest.workspaceSync?.dir;
    if (dir !== undefined) {
      const segments = dir.replace(/^\.\//, '').split('/');
      if (dir.startsWith('/') || segments.some((s) => s === '..' || s === '' || s.includes('\\')))
        throw new Error(`accepted a sync dir leaving the workspace: ${dir}`);
      if (segments.some((s) => ['.git', '.packwarden'].includes(s.toLowerCase())))
        throw new Error(`accepted a sync dir into .git or .packwarden: ${dir}`);
    }
  },
};
