import { lstat, readFile, realpath } from 'node:fs/promises';
import { join, relative, isAbsolute, sep } from 'node:path';
import type { AgentManifest } from '@packwarden/pack-manifest';
import { loadCustomEngine } from './custom-engine.js';
import { CUSTOM_ENGINE_MANIFEST_FILE, ENGINE_ID_PATTERN } from './custom-manifest.js';
import { EngineError } from './errors.js';
import { createExecEngine } from './exec-engine.js';
import { parseExecSpec } from './exec-spec.js';
import type { PackEngine, PackIdentity } from './pack-engine.js';

export interface LoadPackEngineOptions {
  /** The pack folder the engine is loaded from (with `--require-signed-pack`: the verified copy). */
  packDir: string;
  /** Its `agent.yaml`, already loaded from `packDir`. */
  manifest: AgentManifest;
  /** `$PACKWARDEN_HOME`: engines installed there live in `<home>/engines/<id>/`. */
  home: string;
  /** The environment `exec` commands start from. Default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Options of the built-in `exec` engine. */
  exec?: { killGraceMs?: number; stderrTailBytes?: number };
}

/** Engines packwarden knows of but does not ship in this version, and what will provide them. */
export const UNAVAILABLE_ENGINES: Readonly<Record<string, string>> = Object.freeze({
  claude: '@anthropic-ai/claude-agent-sdk',
  codex: '@openai/codex-sdk',
});

/** The engines built into this package. */
export const BUILT_IN_ENGINES: readonly string[] = Object.freeze(['exec']);

const MAX_SYSTEM_PROMPT_BYTES = 256 * 1024;

async function isEngineFolder(dir: string): Promise<boolean> {
  try {
    return (await lstat(join(dir, CUSTOM_ENGINE_MANIFEST_FILE))).isFile();
  } catch {
    return false;
  }
}

/** Reads the pack's `spec.prompts.system`, refusing paths that leave the pack. */
async function readSystemPrompt(
  packDir: string,
  manifest: AgentManifest,
): Promise<string | undefined> {
  const declared = manifest.spec.prompts?.system;
  if (declared === undefined) return undefined;
  const root = await realpath(packDir);
  const path = await realpath(join(root, declared)).catch(() => undefined);
  if (path === undefined) return undefined;
  const rel = relative(root, path);
  if (rel === '' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return undefined;
  const info = await lstat(path);
  if (!info.isFile() || info.size > MAX_SYSTEM_PROMPT_BYTES) return undefined;
  return readFile(path, 'utf8');
}

/**
 * The engine a pack's `spec.engine: <id>` names, found in `<pack>/engines/<id>/`, then
 * `<home>/engines/<id>/` (custom engines, AgentHippo Custom Engine V2), then among the built-in
 * engines (`exec`).
 */
export async function loadPackEngine(options: LoadPackEngineOptions): Promise<PackEngine> {
  const { manifest, packDir } = options;
  const id = manifest.spec.engine;
  if (id === undefined) {
    throw new EngineError(
      'ERR_ENGINE_NOT_SPECIFIED',
      `${manifest.metadata.name} declares no engine: set spec.engine in agent.yaml (e.g. "exec" or the id of a folder under engines/)`,
    );
  }
  if (!ENGINE_ID_PATTERN.test(id)) {
    throw new EngineError('ERR_ENGINE_NOT_FOUND', `invalid engine id ${JSON.stringify(id)}`);
  }
  const pack: PackIdentity = {
    id: manifest.metadata.name,
    version: manifest.metadata.version,
    ...(manifest.spec.permissions?.fileAccess !== undefined
      ? { fileAccess: manifest.spec.permissions.fileAccess }
      : {}),
    ...(manifest.spec.model !== undefined ? { model: manifest.spec.model } : {}),
  };
  const folders = [join(packDir, 'engines', id), join(options.home, 'engines', id)];
  for (const folder of folders) {
    if (await isEngineFolder(folder)) {
      const engine = await loadCustomEngine(folder, {
        pack,
        systemPrompt: () => readSystemPrompt(packDir, manifest),
      });
      if (engine.id !== id) {
        throw new EngineError(
          'ERR_ENGINE_MANIFEST_INVALID',
          `${join(folder, CUSTOM_ENGINE_MANIFEST_FILE)}: id ${JSON.stringify(engine.id)} does not match its folder and spec.engine ${JSON.stringify(id)}`,
        );
      }
      return engine;
    }
  }
  if (id === 'exec') {
    const spec = parseExecSpec((manifest.spec as Record<string, unknown>).exec, packDir);
    return createExecEngine(spec, {
      pack,
      packDir,
      ...(options.env !== undefined ? { baseEnv: options.env } : {}),
      ...(options.exec?.killGraceMs !== undefined ? { killGraceMs: options.exec.killGraceMs } : {}),
      ...(options.exec?.stderrTailBytes !== undefined
        ? { stderrTailBytes: options.exec.stderrTailBytes }
        : {}),
    });
  }
  const sdk = UNAVAILABLE_ENGINES[id];
  if (sdk !== undefined) {
    throw new EngineError(
      'ERR_ENGINE_NOT_AVAILABLE',
      `the ${id} engine is not available in this version of @packwarden/engines: a later version provides it through ${sdk}; until then give the pack a custom engine in engines/${id}/ or use spec.engine: exec`,
    );
  }
  throw new EngineError(
    'ERR_ENGINE_NOT_FOUND',
    `no engine ${JSON.stringify(id)}: looked in ${folders.join(' and ')} (a folder with ${CUSTOM_ENGINE_MANIFEST_FILE}) and among the built-in engines (${BUILT_IN_ENGINES.join(', ')})`,
  );
}
