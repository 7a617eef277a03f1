/**
 * Stable codes carried by {@link EngineError}. They are API: never renamed, never reused.
 */
export type EngineErrorCode =
  /** The pack's `agent.yaml` names no `spec.engine`. */
  | 'ERR_ENGINE_NOT_SPECIFIED'
  /** No engine folder and no built-in engine has that id. */
  | 'ERR_ENGINE_NOT_FOUND'
  /**
   * The pack uses `claude` or `codex` and the SDK that engine is built on (an optional peer
   * dependency) is not installed; the message names the package.
   */
  | 'ERR_ENGINE_SDK_MISSING'
  /**
   * `engine.manifest.json` is missing, too large, not JSON, or breaks the Custom Engine V2
   * contract (the message names the field).
   */
  | 'ERR_ENGINE_MANIFEST_INVALID'
  /** The manifest's `entry` leaves the engine folder, or is not a regular `.mjs` / `.js` file. */
  | 'ERR_ENGINE_ENTRY_INVALID'
  /**
   * Importing the engine module (or an engine's installed SDK) failed, or its `engineExport` is
   * not a class with a `run(turn)` method.
   */
  | 'ERR_ENGINE_LOAD'
  /**
   * A custom engine module imports something that resolves outside the engine folder and the pack
   * (only `node:` built-ins may come from elsewhere).
   */
  | 'ERR_ENGINE_RESOLVE_REFUSED'
  /**
   * The process hosting a custom engine did not start, timed out, broke its protocol, or died
   * while loading the module.
   */
  | 'ERR_ENGINE_PROCESS'
  /** The pack's `spec.exec` is missing or invalid for the `exec` engine. */
  | 'ERR_EXEC_SPEC_INVALID';

/**
 * The brand of every packwarden error: its class name under a `Symbol.for` key, set in the
 * constructor and not enumerable. `Symbol.for` gives the same symbol to every copy of every
 * packwarden package in the process (even in another `vm` context), so the guard below recognises
 * an error from another installed copy of this package, where `instanceof` cannot.
 */
const PACKWARDEN_ERROR = Symbol.for('packwarden.error');

/** The one error class of `@packwarden/engines`; branch on `code`, never on `message`. */
export class EngineError extends Error {
  override readonly name = 'EngineError';
  readonly code: EngineErrorCode;

  constructor(code: EngineErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    Object.defineProperty(this, PACKWARDEN_ERROR, { value: 'EngineError' });
  }
}

/** True for an `EngineError` from this copy of the package or from any other (see `PACKWARDEN_ERROR`). */
export function isEngineError(value: unknown): value is EngineError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { [PACKWARDEN_ERROR]?: unknown })[PACKWARDEN_ERROR] === 'EngineError'
  );
}
