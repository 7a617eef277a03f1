/**
 * Stable codes carried by {@link EngineError}. They are API: never renamed, never reused.
 *
 * - `ERR_ENGINE_NOT_SPECIFIED`: the pack's `agent.yaml` names no `spec.engine`.
 * - `ERR_ENGINE_NOT_FOUND`: no engine folder and no built-in engine has that id.
 * - `ERR_ENGINE_SDK_MISSING`: the pack uses `claude` or `codex` and the SDK that engine is built
 *   on (an optional peer dependency) is not installed; the message names the package.
 * - `ERR_ENGINE_MANIFEST_INVALID`: `engine.manifest.json` is missing, too large, not JSON, or
 *   breaks the Custom Engine V2 contract (the message names the field).
 * - `ERR_ENGINE_ENTRY_INVALID`: the manifest's `entry` leaves the engine folder, or is not a
 *   regular `.mjs` / `.js` file.
 * - `ERR_ENGINE_LOAD`: importing the engine module (or an engine's installed SDK) failed, or its
 *   `engineExport` is not a class with a `run(turn)` method.
 * - `ERR_ENGINE_RESOLVE_REFUSED`: a custom engine module imports something that resolves outside
 *   the engine folder and the pack (only `node:` built-ins may come from elsewhere).
 * - `ERR_ENGINE_PROCESS`: the process hosting a custom engine did not start, timed out, broke
 *   its protocol, or died while loading the module.
 * - `ERR_EXEC_SPEC_INVALID`: the pack's `spec.exec` is missing or invalid for the `exec` engine.
 */
export type EngineErrorCode =
  | 'ERR_ENGINE_NOT_SPECIFIED'
  | 'ERR_ENGINE_NOT_FOUND'
  | 'ERR_ENGINE_SDK_MISSING'
  | 'ERR_ENGINE_MANIFEST_INVALID'
  | 'ERR_ENGINE_ENTRY_INVALID'
  | 'ERR_ENGINE_LOAD'
  | 'ERR_ENGINE_RESOLVE_REFUSED'
  | 'ERR_ENGINE_PROCESS'
  | 'ERR_EXEC_SPEC_INVALID';

/** The one error class of `@packwarden/engines`; branch on `code`, never on `message`. */
export class EngineError extends Error {
  readonly code: EngineErrorCode;

  constructor(code: EngineErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EngineError';
    this.code = code;
  }
}
