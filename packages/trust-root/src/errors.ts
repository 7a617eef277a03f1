/**
 * Stable error codes. They are API: documented in the README, never reused for a different
 * meaning. A `TrustRootError` is thrown only for programmer errors and aborts; every failure of
 * a configured source is reported as an `unavailable` trust root carrying its code instead.
 */
export type TrustRootErrorCode =
  /** Thrown: an option of `loadPackTrustRoot` has the wrong type or is out of range. */
  | 'ERR_INVALID_OPTIONS'
  /** Thrown: `selectTrustedKey` got no valid `at`. */
  | 'ERR_INVALID_ARGUMENT'
  /** Thrown: the caller's `signal` aborted. */
  | 'ERR_ABORTED'
  /** A URL is not a URL, not http(s), or carries credentials. */
  | 'ERR_URL_INVALID'
  /** Plain `http://` to a host that is not loopback. */
  | 'ERR_URL_INSECURE'
  /** A pin is blank or not an RFC 7638 SHA-256 thumbprint, the pins name none, or there are more than 100. */
  | 'ERR_PIN_INVALID'
  /** `PACKWARDEN_PACK_JWKS_MAX_STALE` cannot be parsed or exceeds 30 days. */
  | 'ERR_DURATION_INVALID'
  /** The keys file is missing, unreadable or not a regular file. */
  | 'ERR_KEYS_FILE_READ'
  /** A key document is larger than 256 KiB, or a keys file grew while it was being read. */
  | 'ERR_KEYS_TOO_LARGE'
  /** A key document is not UTF-8, not strict JSON, too deeply nested, or not an accepted shape. */
  | 'ERR_KEYS_PARSE'
  /** A key document repeats a JSON member (`{"release": A, "release": B}`): refused as a whole. */
  | 'ERR_KEYS_DUPLICATE_MEMBER'
  /** A key document lists more than 100 keys. */
  | 'ERR_TOO_MANY_KEYS'
  /** A local key entry is invalid (private, other curve, broken PEM, bad metadata, bad kid). */
  | 'ERR_KEY_INVALID'
  /** No key is left once invalid, unsupported and ambiguous ones are refused. */
  | 'ERR_NO_USABLE_KEYS'
  /** Pins are set and no key matches any of them. */
  | 'ERR_PIN_MISMATCH'
  /** Network error (refused, reset, DNS, TLS). Retryable. */
  | 'ERR_FETCH_FAILED'
  /** No complete answer within the timeout. Retryable. */
  | 'ERR_FETCH_TIMEOUT'
  /** An HTTP status other than 200 (or 304 to a revalidation). Retryable for 5xx, 408 and 429. */
  | 'ERR_HTTP_STATUS'
  /** The server answered with a redirect, which is never followed. */
  | 'ERR_REDIRECT_REFUSED'
  /** The response body exceeded 256 KiB. */
  | 'ERR_RESPONSE_TOO_LARGE';

export interface TrustRootErrorOptions {
  readonly cause?: unknown;
  /** True when trying again later may succeed (network errors, timeouts, HTTP 5xx, 408, 429). */
  readonly retryable?: boolean;
}

/**
 * The brand of every packwarden error: its class name under a `Symbol.for` key, set in the
 * constructor and not enumerable. `Symbol.for` gives the same symbol to every copy of every
 * packwarden package in the process (even in another `vm` context), so the guard below recognises
 * an error from another installed copy of this package, where `instanceof` cannot.
 */
const PACKWARDEN_ERROR = Symbol.for('packwarden.error');

export class TrustRootError extends Error {
  override readonly name = 'TrustRootError';
  readonly code: TrustRootErrorCode;
  readonly retryable: boolean;

  constructor(code: TrustRootErrorCode, message: string, options: TrustRootErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? false;
    Object.defineProperty(this, PACKWARDEN_ERROR, { value: 'TrustRootError' });
  }
}

/** True for a `TrustRootError` from this copy of the package or from any other (see `PACKWARDEN_ERROR`). */
export function isTrustRootError(value: unknown): value is TrustRootError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { [PACKWARDEN_ERROR]?: unknown })[PACKWARDEN_ERROR] === 'TrustRootError'
  );
}
