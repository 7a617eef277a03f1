/**
 * Stable codes carried by {@link RunnerHostError}. They are API: never renamed, never reused.
 *
 * - `ERR_INVALID_OPTIONS`: an options object given to a function of this package is invalid.
 * - `ERR_FRAME_TOO_LARGE`: a frame could not be encoded within the frame size cap.
 * - `ERR_CHANNEL_CLOSED`: the channel to the peer is closed; nothing more can be sent.
 * - `ERR_HANDSHAKE`: the host refused the handshake (`fatal`) or never answered `hello`.
 * - `ERR_DUPLICATE_RUN`: the client already has a run with this `runId`.
 * - `ERR_RUN_ENDED`: the reason of an engine's abort signal once its run is cancelled or stopped.
 * - `ERR_SPAWN`: a host child process could not be started.
 * - `ERR_TOO_MANY_SECRETS`: `SecretSet.pin` was given more than `MAX_RUN_SECRETS` secret values.
 * - `ERR_SOCKET_IN_USE`: `serveRunnerSocket`'s path answers connections: another host serves it.
 * - `ERR_SOCKET_PATH`: `serveRunnerSocket`'s path exists and is not a socket, or cannot be
 *   probed, bound or linked (permissions, a missing folder, a path too long for a socket).
 */
export type RunnerHostErrorCode =
  | 'ERR_INVALID_OPTIONS'
  | 'ERR_FRAME_TOO_LARGE'
  | 'ERR_CHANNEL_CLOSED'
  | 'ERR_HANDSHAKE'
  | 'ERR_DUPLICATE_RUN'
  | 'ERR_RUN_ENDED'
  | 'ERR_SPAWN'
  | 'ERR_TOO_MANY_SECRETS'
  | 'ERR_SOCKET_IN_USE'
  | 'ERR_SOCKET_PATH';

/** The one error class of `@packwarden/runner-host`; branch on `code`, never on `message`. */
export class RunnerHostError extends Error {
  readonly code: RunnerHostErrorCode;

  constructor(code: RunnerHostErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RunnerHostError';
    this.code = code;
  }
}
