import type { AgentManifest } from '@packwarden/pack-manifest';
import type { CommandWrapper } from './command-wrapper.js';
import type { PackIdentity } from './pack-engine.js';
import { readPackPrompt } from './pack-prompt.js';
import { loadEngineSdk, type SdkEngineId } from './sdk-loader.js';
import type { ModelOriginAdmission } from './sdk-turn.js';

/**
 * The options of an engine built on a vendor SDK and its CLI (`claude`, `codex`): each engine's
 * options add only what its CLI makes of them.
 */
export interface SdkEngineOptions<Sdk> {
  pack: PackIdentity;
  /** The environment the CLI starts from (the sandbox's own). Default `process.env`. */
  baseEnv?: Record<string, string | undefined>;
  /**
   * The CLI's executable (Claude Code's `pathToClaudeCodeExecutable`, codex's
   * `codexPathOverride`). Default: the SDK's own.
   */
  executablePath?: string;
  /** Imports the SDK. Default: `import()` of the engine's package (`ENGINE_SDKS`). */
  loadSdk?: () => Promise<Sdk>;
  /** The pack folder and its manifest: their prompt (`spec.prompts.system`, `AGENTS.md`) reaches the model. */
  packDir?: string;
  manifest?: AgentManifest;
  /** Confinement: the CLI starts through it (and so does everything it runs). */
  wrap?: CommandWrapper;
  /**
   * Called before the CLI starts, each turn, with the origin it will send model requests to (the
   * turn's model gateway, or the server root without a token): confinement allows it through its
   * host proxy for this turn (`Confinement#admitOrigin`, whose release runs when the turn ends).
   * Throwing fails the turn (`confinement_failed`).
   */
  onModelOrigin?: ModelOriginAdmission;
  /**
   * Set only when `wrap`'s walls enforce writes (nothing outside the workspace is writable); what
   * the engine then allows is its own (engines README, "Shell commands").
   */
  confinedWrites?: boolean;
}

/** What an SDK engine loads once, when it is created. */
export interface LoadedSdkEngine<Sdk> {
  sdk: Sdk;
  /** `options.baseEnv`, or this process's environment. */
  baseEnv: Record<string, string | undefined>;
  /** The pack's prompt (engines README, "The pack's prompt"), when the options name the pack. */
  packPrompt: string | undefined;
}

/**
 * Creates what an SDK engine's turns share: the SDK, imported only now that a pack uses the
 * engine (`ERR_ENGINE_SDK_MISSING` / `ERR_ENGINE_LOAD` otherwise), and the pack's prompt.
 */
export async function loadSdkEngine<Sdk>(
  engine: SdkEngineId,
  options: SdkEngineOptions<Sdk>,
  importSdk: () => Promise<Sdk>,
): Promise<LoadedSdkEngine<Sdk>> {
  const sdk = await loadEngineSdk(engine, options.loadSdk ?? importSdk);
  const baseEnv = options.baseEnv ?? process.env;
  const packPrompt =
    options.packDir !== undefined && options.manifest !== undefined
      ? await readPackPrompt(options.packDir, options.manifest)
      : undefined;
  return { sdk, baseEnv, packPrompt };
}
