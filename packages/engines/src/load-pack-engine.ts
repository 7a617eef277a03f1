import { lstat, readFile, realpath } from 'node:fs/promises';
import { join, relative, isAbsolute, sep } from 'node:path';
import type { AgentManifest } from '@packwarden/pack-manifest';
import { createClaudeEngine, type CreateClaudeEngineOptions } from './claude-engine.js';
import { createCodexEngine, type CreateCodexEngineOptions } from './codex-engine.js';
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
  /** The environment `exec` commands and the `claude` / `codex` CLIs start from. Default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Options of the built-in `exec` engine. */
  exec?: { killGraceMs?: number; stderrTailBytes?: number };
  /** Options of the built-in `claude` engine (its SDK is imported only when a pack uses it). */
  claude?: Pick<CreateClaudeEngineOptions, 'executablePath' | 'loadSdk'>;
  /** Options of the built-in `codex` engine (its SDK is imported only when a pack uses it). */
  codex?: Pick<CreateCodexEngineOptions, 'executablePath' | 'loadSdk'>;
}

/** The engines built into this package (`claude` and `codex` need their optional SDK). */
export const BUILT_IN_ENGINES: readonly string[] = Object.freeze(['exec', 'claude', 'codex']);

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
 * engines (`exec`, and `claude` / `codex`, which import their SDK here).
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
  if (id === 'claude' || id === 'codex') {
    const sdkOptions = {
      pack,
      ...(options.env !== undefined ? { baseEnv: options.env } : {}),
      ...(options[id]?.executablePath !== undefined
        ? { executablePath: options[id].executablePath }
        : {}),
    };
    if (id === 'claude') {
      const loadSdk = options.claude?.loadSdk;
      return createClaudeEngine({ ...sdkOptions, ...(loadSdk !== undefined ? { loadSdk } : {}) });
    }
    const loadSdk = options.codex?.loadSdk;
    return createCodexEngine({ ...sdkOptions, ...(loadSdk !== undefined ? { loadSdk } : {}) });
  }
  throw new EngineError(
    'ERR_ENGINE_NOT_FOUND',
    `no engine ${JSON.stringify(id)}: looked in ${folders.join(' and ')} (a folder with ${CUSTOM_ENGINE_MANIFEST_FILE}) and among the built-in engines (${BUILT_IN_ENGINES.join(', ')})`,
  );
}
