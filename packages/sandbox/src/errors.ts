import type { PackVerification } from '@packwarden/pack-signature';

/**
 * Every way the sandbox service and the `run` driver refuse or fail. Codes are API: documented in
 * the README, never renamed, never reused for another meaning.
 */
export type SandboxErrorCode =
  /** An option is missing or has the wrong shape (a programming error of the embedder). */
  | 'ERR_INVALID_OPTIONS'
  /** The state folder (or the workspace) cannot be created or used. */
  | 'ERR_STATE_DIR'
  /**
   * A folder the sandbox writes into (the verified copy under the state folder, the pack's
   * place in the workspace, `.packwarden/agents/<name>/`, or a folder of `<state>/engine`: HOME,
   * TMPDIR, the XDG folders, npm's cache) is reached through a symlink or a non-folder the
   * sandbox did not create: refused, nothing removed or written.
   */
  | 'ERR_UNSAFE_PATH'
  /** The workspace and the pack overlap (one inside the other): syncing would empty or recurse into the pack. */
  | 'ERR_WORKSPACE_OVERLAPS_PACK'
  /** The pack cannot be copied: an entry is not a file, folder or symlink, or it exceeds the copy limits. */
  | 'ERR_PACK_COPY'
  /** A signature is required and the verified copy's `pack.sig` was refused; `verification` says why. */
  | 'ERR_SIGNATURE_REFUSED'
  /**
   * A signature is required and the pack's engine would load code that is neither in the verified
   * copy nor built into packwarden (an engine installed under `$PACKWARDEN_HOME/engines/`).
   */
  | 'ERR_ENGINE_UNVERIFIED'
  /** The socket path exists and is not a socket, or the socket cannot be bound. */
  | 'ERR_SOCKET'
  /**
   * The socket path lies inside a folder pack code can see (the workspace or `<state>/engine`):
   * confined code could connect to it and send its own run frames.
   */
  | 'ERR_SOCKET_EXPOSED'
  /**
   * A turn's model `baseUrl` names another origin than the one a turn of another session is
   * using: one confinement admits one model origin at a time.
   */
  | 'ERR_MODEL_ORIGIN_BUSY'
  /** The `run` driver could not start the sandbox process. */
  | 'ERR_SANDBOX_START'
  /** Confinement was required (`isolation: 'required'`) and a guarantee cannot be enforced. */
  | 'ERR_ISOLATION_UNAVAILABLE'
  /** A confinement policy is unusable: a folder is missing or `/`, an origin is malformed. */
  | 'ERR_ISOLATION_POLICY_INVALID'
  /** The confinement's private folder or its host proxy could not be set up. */
  | 'ERR_ISOLATION_SETUP'
  /** A command was wrapped after the confinement was closed (it would run without its proxy). */
  | 'ERR_ISOLATION_CLOSED';

export interface SandboxErrorOptions {
  cause?: unknown;
  /** `ERR_SIGNATURE_REFUSED`: the refused verification result (its `kind` maps to an exit code). */
  verification?: PackVerification;
}

/**
 * The brand of every packwarden error: its class name under a `Symbol.for` key, set in the
 * constructor and not enumerable. `Symbol.for` gives the same symbol to every copy of every
 * packwarden package in the process (even in another `vm` context), so the guard below recognises
 * an error from another installed copy of this package, where `instanceof` cannot.
 */
const PACKWARDEN_ERROR = Symbol.for('packwarden.error');

/** The one error class of `@packwarden/sandbox`; branch on `code`, never on `message`. */
export class SandboxError extends Error {
  override readonly name = 'SandboxError';
  readonly code: SandboxErrorCode;
  readonly verification: PackVerification | undefined;

  constructor(code: SandboxErrorCode, message: string, options: SandboxErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.verification = options.verification;
    Object.defineProperty(this, PACKWARDEN_ERROR, { value: 'SandboxError' });
  }
}

/** True for a `SandboxError` from this copy of the package or from any other (see `PACKWARDEN_ERROR`). */
export function isSandboxError(value: unknown): value is SandboxError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { [PACKWARDEN_ERROR]?: unknown })[PACKWARDEN_ERROR] === 'SandboxError'
  );
}
