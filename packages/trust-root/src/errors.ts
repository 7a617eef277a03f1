/**
 * Stable error codes. They are API: documented in the README, never reused for a different
 * meaning. A `TrustRootError` is thrown only for programmer errors and aborts; every failure of
 * a configured source is reported as an `unavailable` trust root carrying its code instead.
 */
export type TrustRootErrorCode =
  | 'ERR_INVALID_OPTIONS'
  | 'ERR_INVALID_ARGUMENT'
  | 'ERR_ABORTED'
  | 'ERR_URL_INVALID'
  | 'ERR_URL_INSECURE'
  | 'ERR_PIN_INVALID'
  | 'ERR_DURATION_INVALID'
  | 'ERR_KEYS_FILE_READ'
  | 'ERR_KEYS_TOO_LARGE'
  | 'ERR_KEYS_PARSE'
  | 'ERR_TOO_MANY_KEYS'
  | 'ERR_KEY_INVALID'
  | 'ERR_NO_USABLE_KEYS'
  | 'ERR_PIN_MISMATCH'
  | 'ERR_FETCH_FAILED'
  | 'ERR_FETCH_TIMEOUT'
  | 'ERR_HTTP_STATUS'
  | 'ERR_REDIRECT_REFUSED'
  | 'ERR_RESPONSE_TOO_LARGE';

export interface TrustRootErrorOptions {
  readonly cause?: unknown;
  /** True when trying again later may succeed (network errors, timeouts, HTTP 5xx). */
  readonly retryable?: boolean;
}

export class TrustRootError extends Error {
  override readonly name = 'TrustRootError';
  readonly code: TrustRootErrorCode;
  readonly retryable: boolean;

  constructor(code: TrustRootErrorCode, message: string, options: TrustRootErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}
