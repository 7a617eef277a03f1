import { EngineError } from './errors.js';

/** The SDK each SDK-backed engine is built on: optional peer dependencies of this package. */
export const ENGINE_SDKS = Object.freeze({
  claude: '@anthropic-ai/claude-agent-sdk',
  codex: '@openai/codex-sdk',
} as const);

/** An engine built on an optional SDK. */
export type SdkEngineId = keyof typeof ENGINE_SDKS;

/** The versions this package is tested with (what the install hint asks for). */
const TESTED_VERSIONS: Readonly<Record<SdkEngineId, string>> = {
  claude: '0.3.332',
  codex: '0.163.0',
};

function isMissingPackage(error: unknown, packageName: string): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  return (
    (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
    typeof message === 'string' &&
    message.includes(packageName)
  );
}

/**
 * Imports an engine's SDK only when a pack uses that engine. A missing package is
 * `ERR_ENGINE_SDK_MISSING`, naming what to install; any other import failure is
 * `ERR_ENGINE_LOAD`.
 */
export async function loadEngineSdk<T>(
  engine: SdkEngineId,
  importer: () => Promise<T>,
): Promise<T> {
  const packageName = ENGINE_SDKS[engine];
  try {
    return await importer();
  } catch (error) {
    if (isMissingPackage(error, packageName)) {
      throw new EngineError(
        'ERR_ENGINE_SDK_MISSING',
        `the ${engine} engine needs ${packageName}, an optional peer dependency of @packwarden/engines that is not installed: install it next to @packwarden/engines (npm install ${packageName}@${TESTED_VERSIONS[engine]})`,
        { cause: error },
      );
    }
    throw new EngineError(
      'ERR_ENGINE_LOAD',
      `the ${engine} engine could not load ${packageName}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}
