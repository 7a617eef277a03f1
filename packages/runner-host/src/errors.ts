/**
 * Stable codes carried by {@link RunnerHostError}. They are API: never renamed, never reused.
 */
export type RunnerHostErrorCode =
  /** An options object given to a function of this package is invalid. */
  | 'ERR_INVALID_OPTIONS'
  /** A frame could not be encoded within the frame size cap. */
  | 'ERR_FRAME_TOO_LARGE'
  /** The channel to the peer is closed; nothing more can be sent. */
  | 'ERR_CHANNEL_CLOSED'
  /** The host refused the handshake (`fatal`) or never answered `hello`. */
  | 'ERR_HANDSHAKE'
  /** The client already has a run with this `runId`. */
  | 'ERR_DUPLICATE_RUN'
  /** A `runId` that is not a string of 1 to 256 characters: no host could answer the run by it. */
  | 'ERR_INVALID_RUN_ID'
  /** The reason of an engine's abort signal once its run is cancelled or stopped. */
  | 'ERR_RUN_ENDED'
  /** A host child process could not be started. */
  | 'ERR_SPAWN'
  /** `SecretSet.pin` was given more than `MAX_RUN_SECRETS` secret values. */
  | 'ERR_TOO_MANY_SECRETS'
  /** `serveRunnerSocket`'s path answers connections: another host serves it. */
  | 'ERR_SOCKET_IN_USE'
  /**
   * `serveRunnerSocket`'s path exists and is not a socket, or cannot be probed, bound or linked
   * (permissions, a missing folder); or a path given to `serveRunnerSocket` or
   * `connectRunnerSocket` is too long for a unix socket (`MAX_SOCKET_PATH_BYTES`).
   */
  | 'ERR_SOCKET_PATH';

/**
 * The brand of every packwarden error: its class name under a `Symbol.for` key, set in the
 * constructor and not enumerable. `Symbol.for` gives the same symbol to every copy of every
 * packwarden package in the process (even in another `vm` context), so the guard below recognises
 * an error from another installed copy of this package, where `instanceof` cannot.
 */
const PACKWARDEN_ERROR = Symbol.for('packwarden.error');

/** The one error class of `@packwarden/runner-host`; branch on `code`, never on `message`. */
export class RunnerHostError extends Error {
  override readonly name = 'RunnerHostError';
  readonly code: RunnerHostErrorCode;

  constructor(code: RunnerHostErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    Object.defineProperty(this, PACKWARDEN_ERROR, { value: 'RunnerHostError' });
  }
}

/** True for a `RunnerHostError` from this copy of the package or from any other (see `PACKWARDEN_ERROR`). */
export function isRunnerHostError(value: unknown): value is RunnerHostError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { [PACKWARDEN_ERROR]?: unknown })[PACKWARDEN_ERROR] === 'RunnerHostError'
  );
}
