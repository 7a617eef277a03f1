import type { OciErrorCode } from './oci/errors.js';

/**
 * Every way this package fails. Codes are API: each names one failure and is never reused.
 * See the README's "Errors" table for what to do about each.
 */
export type StoreErrorCode =
  // artifact refs and options
  | 'ERR_REF_INVALID'
  | 'ERR_INVALID_ARGUMENT'
  | 'ERR_ABORTED'
  // reaching a store
  | 'ERR_STORE_URL_INVALID'
  | 'ERR_STORE_FETCH'
  | 'ERR_STORE_HTTP_STATUS'
  | 'ERR_STORE_TIMEOUT'
  | 'ERR_STORE_REDIRECT'
  | 'ERR_STORE_INDEX_INVALID'
  | 'ERR_STORE_INDEX_TOO_LARGE'
  | 'ERR_ARTIFACT_NOT_FOUND'
  | 'ERR_VERSION_NOT_FOUND'
  | 'ERR_ARTIFACT_TYPE_UNSUPPORTED'
  // downloads
  | 'ERR_DOWNLOAD_TOO_LARGE'
  | 'ERR_DOWNLOAD_SIZE_MISMATCH'
  | 'ERR_DOWNLOAD_INTEGRITY'
  /**
   * The server applied a `Content-Encoding` (gzip, br…) to an archive although `identity` was
   * asked: `fetch` would hand over decoded bytes that the index's size and SHA-256 do not describe.
   */
  | 'ERR_DOWNLOAD_CONTENT_ENCODING'
  // archives
  | 'ERR_ARCHIVE_NOT_GZIP'
  | 'ERR_ARCHIVE_CORRUPT'
  | 'ERR_ARCHIVE_TRUNCATED'
  | 'ERR_ARCHIVE_TRAILING_DATA'
  | 'ERR_ARCHIVE_BAD_CHECKSUM'
  | 'ERR_ARCHIVE_HEADER_INVALID'
  | 'ERR_ARCHIVE_META_TOO_LARGE'
  | 'ERR_ARCHIVE_PAX_SIZE_MISMATCH'
  | 'ERR_ARCHIVE_LINK'
  | 'ERR_ARCHIVE_ENTRY_TYPE'
  | 'ERR_ARCHIVE_PATH_UNSAFE'
  | 'ERR_ARCHIVE_PATH_COLLISION'
  | 'ERR_ARCHIVE_PATH_TOO_LONG'
  | 'ERR_ARCHIVE_TOO_DEEP'
  | 'ERR_ARCHIVE_TOO_MANY_ENTRIES'
  | 'ERR_ARCHIVE_TOO_LARGE'
  | 'ERR_ARCHIVE_RATIO'
  | 'ERR_ARCHIVE_PREFIX_NOT_FOUND'
  | 'ERR_ARCHIVE_IO'
  // install
  | 'ERR_TARGET_NOT_EMPTY'
  | 'ERR_ALREADY_INSTALLED'
  /**
   * The version to install is lower (semver precedence) than the one `current.txt` names, or
   * `current.txt` names no version: refused unless `allowDowngrade`, so a store cannot silently
   * roll an install back.
   */
  | 'ERR_DOWNGRADE_REFUSED'
  | 'ERR_PACK_INVALID'
  | 'ERR_PACK_IDENTITY_MISMATCH'
  | 'ERR_PACK_DIGEST_MISMATCH'
  | 'ERR_SIGNATURE_REFUSED'
  | 'ERR_INSTALL_LOCKED'
  | 'ERR_INSTALL_IO'
  // static store builder
  | 'ERR_BUILD_NO_PACKS'
  | 'ERR_BUILD_PACK_INVALID'
  | 'ERR_BUILD_DUPLICATE'
  | 'ERR_BUILD_UNSUPPORTED_ENTRY'
  | 'ERR_BUILD_PACK_CHANGED'
  | 'ERR_BUILD_IO'
  | OciErrorCode; // OCI registries: each documented in ./oci/errors.ts

export interface StoreErrorOptions {
  cause?: unknown;
  /** The archive entry path, URL or file the error is about, when there is one. */
  subject?: string;
  /** `ERR_SIGNATURE_REFUSED`: the verification result that was not `verified`. */
  verification?: unknown;
}

export class StoreError extends Error {
  override readonly name = 'StoreError';
  readonly code: StoreErrorCode;
  readonly subject: string | undefined;
  readonly verification: unknown;

  constructor(code: StoreErrorCode, message: string, options: StoreErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.subject = options.subject;
    this.verification = options.verification;
  }
}

export function isStoreError(value: unknown): value is StoreError {
  return value instanceof StoreError;
}

export function abortError(signal: AbortSignal | undefined): StoreError {
  return new StoreError('ERR_ABORTED', 'the operation was aborted', { cause: signal?.reason });
}
