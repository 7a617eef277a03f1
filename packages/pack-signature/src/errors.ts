/**
 * Every way the API of this package can throw. Codes are API: each names one failure and is
 * never reused. Problems with a pack or its token are never thrown by `verifyPack`: they are
 * results (see `PackVerification`).
 */
export type PackSignatureErrorCode =
  /** An option is missing or has the wrong type (e.g. no `selectKey`, a `now` that is not a Date). */
  | 'ERR_INVALID_ARGUMENT'
  /** A `kid` given to `signPack` / `generateKeypair` is empty, too long, or has path, control or whitespace characters. */
  | 'ERR_INVALID_KID'
  /** `privateKeyPem` is not a PEM key that Node.js can read. */
  | 'ERR_SIGNING_KEY_INVALID'
  /** `privateKeyPem` holds a public key (or a certificate): signing needs the private half. */
  | 'ERR_SIGNING_KEY_NOT_PRIVATE'
  /** `privateKeyPem` is a private key, but not EC P-256 (ES256). */
  | 'ERR_SIGNING_KEY_UNSUPPORTED'
  /** `signPack`: the pack's `agent.yaml` is missing or invalid (`cause` is the `PackManifestError`). */
  | 'ERR_MANIFEST_INVALID'
  /** `signPack`: the pack's content cannot be digested (`cause` is the `PackDigestError`). */
  | 'ERR_PACK_UNREADABLE'
  /** `signEngine`: `engine.manifest.json` or `package.json` of the engine folder is missing or invalid. */
  | 'ERR_ENGINE_INVALID'
  /** `signEngine`: the engine folder holds a root `pack.sig`, which an engine digest cannot cover. */
  | 'ERR_ENGINE_HOLDS_PACK_SIGNATURE'
  /** `signPack`: writing `pack.sig` failed; any previous `pack.sig` is left as it was. */
  | 'ERR_SIGNATURE_WRITE'
  /** `signPack`: another running process is writing this pack's `pack.sig` right now. */
  | 'ERR_SIGNING_IN_PROGRESS'
  /** `readPackSignature`: the operating system refused to open or read `pack.sig` (not "absent"). */
  | 'ERR_SIGNATURE_UNREADABLE'
  /** `verifyPack`: the `selectKey` callback threw, or returned something that is not a `KeySelection`. */
  | 'ERR_KEY_SELECTOR'
  /** `verifyPack`: `selectKey` returned a key that is not an EC P-256 public key for the token's `kid`. */
  | 'ERR_VERIFICATION_KEY_INVALID'
  /** `readPrivateKeyFile`: the key file is missing, a symlink, not a regular file, or larger than 64 KiB. */
  | 'ERR_KEY_FILE_UNREADABLE'
  /** `readPrivateKeyFile`: group or others may read the private key file; it is not used. */
  | 'ERR_KEY_FILE_UNSAFE'
  /** `writePrivateKeyFile` / `writePublicKeysFile`: the file exists and `force` was not given. */
  | 'ERR_KEY_FILE_EXISTS'
  /** `writePrivateKeyFile` / `writePublicKeysFile`: the operating system refused the write. */
  | 'ERR_KEY_FILE_WRITE'
  /** The caller's `AbortSignal` fired. */
  | 'ERR_ABORTED'
  /** A token this package just produced failed its own checks: a bug, never a user error. */
  | 'ERR_INTERNAL';

export interface PackSignatureErrorOptions {
  cause?: unknown;
}

/**
 * The brand of every packwarden error: its class name under a `Symbol.for` key, set in the
 * constructor and not enumerable. `Symbol.for` gives the same symbol to every copy of every
 * packwarden package in the process (even in another `vm` context), so the guard below recognises
 * an error from another installed copy of this package, where `instanceof` cannot.
 */
const PACKWARDEN_ERROR = Symbol.for('packwarden.error');

export class PackSignatureError extends Error {
  override readonly name = 'PackSignatureError';
  readonly code: PackSignatureErrorCode;

  constructor(
    code: PackSignatureErrorCode,
    message: string,
    options: PackSignatureErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    Object.defineProperty(this, PACKWARDEN_ERROR, { value: 'PackSignatureError' });
  }
}

/** True for a `PackSignatureError` from this copy of the package or from any other (see `PACKWARDEN_ERROR`). */
export function isPackSignatureError(value: unknown): value is PackSignatureError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { [PACKWARDEN_ERROR]?: unknown })[PACKWARDEN_ERROR] === 'PackSignatureError'
  );
}
