import { join } from 'node:path';
import type { AgentManifest } from '@packwarden/pack-manifest';
import type { CreateClaudeEngineOptions } from './claude-engine.js';
import type { CreateCodexEngineOptions } from './codex-engine.js';
import type { CommandWrapper } from './command-wrapper.js';
import { loadCustomEngine } from './custom-engine.js';
import { CUSTOM_ENGINE_MANIFEST_FILE, ENGINE_ID_PATTERN } from './custom-manifest.js';
import { EngineError } from './errors.js';
import {
  installedEngineCandidates,
  isEngineFolder,
  type InstalledEngineSource,
} from './installed-engine.js';
import { createExecEngine } from './exec-engine.js';
import { parseExecSpec } from './exec-spec.js';
import type { PackEngine, PackIdentity } from './pack-engine.js';

export interface LoadPackEngineOptions {
  /** The pack folder the engine is loaded from (with `--require-signed-pack`: the verified copy). */
  packDir: string;
  /** Its `agent.yaml`, already loaded from `packDir`. */
  manifest: AgentManifest;
  /**
   * `$PACKWARDEN_HOME`: engines installed there live in `<home>/engines/<id>/<version>/`, the
   * version named by `<home>/engines/<id>/current.txt` (what `store install engine/<id>` writes),
   * or directly in `<home>/engines/<id>/`.
   */
  home: string;
  /** The environment `exec` commands and the `claude` / `codex` CLIs start from. Default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Options of the built-in `exec` engine. */
  exec?: { killGraceMs?: number; stderrTailBytes?: number };
  /** Options of the built-in `claude` engine (its SDK is imported only when a pack uses it). */
  claude?: Pick<
    CreateClaudeEngineOptions,
    'executablePath' | 'loadSdk' | 'confinedWrites' | 'onModelOrigin'
  >;
  /** Options of the built-in `codex` engine (its SDK is imported only when a pack uses it). */
  codex?: Pick<
    CreateCodexEngineOptions,
    'executablePath' | 'loadSdk' | 'confinedWrites' | 'onModelOrigin' | 'launcherDir'
  >;
  /**
   * Decides whether engine code from `source` may load, before anything of it is read; throw to
   * refuse, or answer `{ folder }` to load the engine from that folder instead (the sandbox's
   * verified copy of an installed engine). The sandbox uses it to admit an installed engine only
   * when a signature is required and its verified copy carries a valid `engine.sig`
   * (docs/sandbox.md, "What may load"). Default: everything found may load.
   */
  admit?: (source: EngineSource) => EngineAdmission | Promise<EngineAdmission>;
  /**
   * Confinement: rewrites every child the engine starts (exec commands, the process hosting a
   * custom engine, the claude / codex CLIs). Default: none (commands run as given).
   */
  wrap?: CommandWrapper;
  /** Custom engines: logs and console lines that belong to no run (scrubbed). */
  onLog?: (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;
}

/**
 * Where the code of a pack's engine comes from: built into this package, the pack's own
 * `engines/<id>/`, or an engine installed in `<home>/engines/<id>/`.
 */
export type EngineSource =
  | { kind: 'built-in'; id: string }
  | { kind: 'pack'; id: string; folder: string }
  | InstalledEngineSource;

/** What `admit` answers: nothing (load from the source), or the folder to load from instead. */
export type EngineAdmission = void | { folder: string };

/** The engines built into this package (`claude` and `codex` need their optional SDK). */
export const BUILT_IN_ENGINES: readonly string[] = Object.freeze(['exec', 'claude', 'codex']);

/**
 * The engine a pack's `spec.engine: <id>` names. A built-in id (`exec`, `claude`, `codex`) is
 * always the built-in engine: no folder can shadow it (a folder named `engines/exec/` in the pack
 * or in `home` is never loaded). Any other id is a custom engine (AgentHippo Custom Engine V2)
 * found in `<pack>/engines/<id>/`, then `<home>/engines/<id>/`, then
 * `<home>/engines/<id>/<current.txt>/` (an engine installed from a store). `options.admit` sees
 * the source before any of its code loads, and may name the folder to load from instead.
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
  if (BUILT_IN_ENGINES.includes(id)) {
    await options.admit?.({ kind: 'built-in', id });
    return loadBuiltInEngine(id, pack, options);
  }
  const folders: Array<Extract<EngineSource, { folder: string }>> = [
    { kind: 'pack', id, folder: join(packDir, 'engines', id) },
    ...(await installedEngineCandidates(options.home, id)),
  ];
  for (const source of folders) {
    if (await isEngineFolder(source.folder)) {
      const admitted = await options.admit?.(source);
      const folder = admitted === undefined ? source.folder : admitted.folder;
      const engine = await loadCustomEngine(folder, {
        pack,
        packDir,
        packManifest: manifest,
        ...(options.env !== undefined ? { env: options.env } : {}),
        ...(options.wrap !== undefined ? { wrap: options.wrap } : {}),
        ...(options.onLog !== undefined ? { onLog: options.onLog } : {}),
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
  throw new EngineError(
    'ERR_ENGINE_NOT_FOUND',
    `no engine ${JSON.stringify(id)}: looked in ${folders.map((source) => source.folder).join(' and ')} (a folder with ${CUSTOM_ENGINE_MANIFEST_FILE}) and among the built-in engines (${BUILT_IN_ENGINES.join(', ')})`,
  );
}

async function loadBuiltInEngine(
  id: string,
  pack: PackIdentity,
  options: LoadPackEngineOptions,
): Promise<PackEngine> {
  const { manifest, packDir } = options;
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
      ...(options.wrap !== undefined ? { wrap: options.wrap } : {}),
    });
  }
  if (id === 'claude' || id === 'codex') {
    const sdkOptions = {
      pack,
      // The pack's prompt (spec.prompts.system, AGENTS.md) reaches the model (engines README).
      packDir,
      manifest,
      ...(options.env !== undefined ? { baseEnv: options.env } : {}),
      ...(options.wrap !== undefined ? { wrap: options.wrap } : {}),
      ...(options[id]?.executablePath !== undefined
        ? { executablePath: options[id].executablePath }
        : {}),
    };
    // The walls decide these (the sandbox's confinement): whether writes are confined by it and
    // how the engine's host-side model gateway is admitted through its proxy.
    const { loadSdk, confinedWrites, onModelOrigin } = options[id] ?? {};
    const engineOptions = {
      ...sdkOptions,
      ...(loadSdk !== undefined ? { loadSdk } : {}),
      ...(confinedWrites !== undefined ? { confinedWrites } : {}),
      ...(onModelOrigin !== undefined ? { onModelOrigin } : {}),
    };
    // Imported here, not with this module: a sandbox of any other engine never loads them (nor
    // node:http behind their model gateway), ~4 ms of every boot (issue 14, bench/boot).
    if (id === 'claude') {
      const { createClaudeEngine } = await import('./claude-engine.js');
      return createClaudeEngine(engineOptions as CreateClaudeEngineOptions);
    }
    const { createCodexEngine } = await import('./codex-engine.js');
    const launcherDir = options.codex?.launcherDir;
    return createCodexEngine({
      ...(engineOptions as CreateCodexEngineOptions),
      ...(launcherDir !== undefined ? { launcherDir } : {}),
    });
  }
  throw new EngineError('ERR_ENGINE_NOT_FOUND', `no built-in engine ${JSON.stringify(id)}`);
}
