import type { OciErrorCode } from './oci/errors.js';

/**
 * Every way this package fails. Codes are API: each names one failure and is never reused.
 * See the README's "Errors" table for what to do about each.
 */
export type StoreErrorCode =
  // artifact refs and options
  /** Not `<type>/<slug>[@<version>]`. */
  | 'ERR_REF_INVALID'
  /**
   * A bad option (a negative limit, a repo that is not `owner/name`, a `stripPrefix` with `..`, an
   * unrecognised `PACKWARDEN_REQUIRE_SIGNED_PACK`).
   */
  | 'ERR_INVALID_ARGUMENT'
  /** The `signal` fired. */
  | 'ERR_ABORTED'
  // reaching a store
  /**
   * Not `https://` (or loopback `http://`), `file://` or a path; credentials in the URL; a remote
   * index pointing at `file://`; an `https://` index pointing at, or a redirect from `https://` to,
   * plain `http://` (even on loopback).
   */
  | 'ERR_STORE_URL_INVALID'
  /** The network or the file system failed while reaching the store or reading an archive. */
  | 'ERR_STORE_FETCH'
  /** An HTTP status other than 2xx (or 304 on revalidation). */
  | 'ERR_STORE_HTTP_STATUS'
  /**
   * No answer within `timeoutMs`, an index body slower than that, a download stalled for
   * `idleTimeoutMs`, or a download (archive, tarball, OCI layer) not over within
   * `downloadTimeoutMs` of its request.
   */
  | 'ERR_STORE_TIMEOUT'
  /**
   * A static store redirecting to another origin, more than 5 redirects, a redirect without
   * `Location`.
   */
  | 'ERR_STORE_REDIRECT'
  /**
   * The index is not strict JSON (a member named twice is refused), not an object, or of neither
   * store kind.
   */
  | 'ERR_STORE_INDEX_INVALID'
  /** The index is over 8 MiB or 10,000 rows. */
  | 'ERR_STORE_INDEX_TOO_LARGE'
  /** No such artifact in the store. */
  | 'ERR_ARTIFACT_NOT_FOUND'
  /** The store does not list that version. */
  | 'ERR_VERSION_NOT_FOUND'
  /** `installPack` of a skill or an MCP server (packs and engines install). */
  | 'ERR_ARTIFACT_TYPE_UNSUPPORTED'
  // downloads
  /**
   * An AgentHippo tarball over `maxDownloadBytes`, a static store archive whose index `size` is
   * over it (refused before the download), or a local archive over `openPackArchive`'s `maxBytes`.
   */
  | 'ERR_DOWNLOAD_TOO_LARGE'
  /** An archive longer or shorter than the index's `size` (stopped as soon as it is longer). */
  | 'ERR_DOWNLOAD_SIZE_MISMATCH'
  /**
   * An archive whose SHA-256 is not the index's (or not the one recorded when a local archive was
   * opened).
   */
  | 'ERR_DOWNLOAD_INTEGRITY'
  /**
   * The server applied a `Content-Encoding` (gzip, br…) to an archive although `identity` was
   * asked: `fetch` would hand over decoded bytes that the index's size and SHA-256 do not
   * describe.
   */
  | 'ERR_DOWNLOAD_CONTENT_ENCODING'
  // archives
  /** The archive does not start with the gzip magic (empty, an HTML page, a plain tar). */
  | 'ERR_ARCHIVE_NOT_GZIP'
  /** The gzip stream is corrupt (bad deflate data or CRC). */
  | 'ERR_ARCHIVE_CORRUPT'
  /** The gzip stream or the tar ends early (no end-of-archive marker). */
  | 'ERR_ARCHIVE_TRUNCATED'
  /**
   * Bytes after the gzip stream (zeros included), or anything but zeros after the tar's end-of-
   * archive blocks; the same verdict however the bytes are chunked.
   */
  | 'ERR_ARCHIVE_TRAILING_DATA'
  /** A tar header whose checksum does not match. */
  | 'ERR_ARCHIVE_BAD_CHECKSUM'
  /**
   * A malformed tar, PAX or GNU header (bad numbers, repeated PAX keys, a lone zero block, a
   * global path).
   */
  | 'ERR_ARCHIVE_HEADER_INVALID'
  /** A PAX or GNU long-name header body over `maxMetaBytes`. */
  | 'ERR_ARCHIVE_META_TOO_LARGE'
  /** A PAX `size` that differs from the header's. */
  | 'ERR_ARCHIVE_PAX_SIZE_MISMATCH'
  /** A symbolic or hard link (or a file carrying a link target). */
  | 'ERR_ARCHIVE_LINK'
  /** A device, FIFO, sparse file or unknown entry type. */
  | 'ERR_ARCHIVE_ENTRY_TYPE'
  /**
   * An absolute path, `..`, a NUL, invalid UTF-8, a Windows-special name, or an entry outside the
   * single top folder.
   */
  | 'ERR_ARCHIVE_PATH_UNSAFE'
  /** Two entries with one name after NFC and case folding, or a file where a folder is. */
  | 'ERR_ARCHIVE_PATH_COLLISION'
  /** A path over `maxPathBytes` or a name over `maxNameBytes`. */
  | 'ERR_ARCHIVE_PATH_TOO_LONG'
  /** A path with more than `maxDepth` components. */
  | 'ERR_ARCHIVE_TOO_DEEP'
  /** More than `maxEntries` extracted (implied folders included) or `maxScannedEntries` read. */
  | 'ERR_ARCHIVE_TOO_MANY_ENTRIES'
  /** More than `maxBytes` of content or `maxTarBytes` of uncompressed tar. */
  | 'ERR_ARCHIVE_TOO_LARGE'
  /** An uncompressed : compressed ratio over `maxRatio` (a decompression bomb). */
  | 'ERR_ARCHIVE_RATIO'
  /** Nothing in the archive under `stripPrefix` (the artifact's folder is not in the tarball). */
  | 'ERR_ARCHIVE_PREFIX_NOT_FOUND'
  /** The operating system refused a write while extracting, or reading the archive failed. */
  | 'ERR_ARCHIVE_IO'
  // install
  /** `to` / `dest` is not empty and `force` is not set. */
  | 'ERR_TARGET_NOT_EMPTY'
  /** That version is installed and `force` is not set. */
  | 'ERR_ALREADY_INSTALLED'
  /**
   * The version to install is lower (semver precedence) than the one `current.txt` names, or
   * `current.txt` names no version: refused unless `allowDowngrade`, so a store cannot silently
   * roll an install back.
   */
  | 'ERR_DOWNGRADE_REFUSED'
  /** No valid `agent.yaml` (in the extracted pack, or at the root of a local archive). */
  | 'ERR_PACK_INVALID'
  /**
   * `agent.yaml` (of an engine: `engine.manifest.json` `id` / `package.json` `version`) names
   * another slug or version than the one asked for.
   */
  | 'ERR_PACK_IDENTITY_MISMATCH'
  /** An engine archive has no valid `engine.manifest.json` (Custom Engine V2), or holds a root `pack.sig`. */
  | 'ERR_ENGINE_INVALID'
  /** The pack digest (of an engine: its digest) differs from the one the static index lists. */
  | 'ERR_PACK_DIGEST_MISMATCH'
  /**
   * The `pack.sig` in the archive (of an engine: its `engine.sig`) is missing or differs from the
   * one the static index lists.
   */
  | 'ERR_PACK_SIGNATURE_MISMATCH'
  /**
   * Signatures required and the result is not `verified`, or a trust root given and the `pack.sig`
   * does not verify; `error.verification` holds the result.
   */
  | 'ERR_SIGNATURE_REFUSED'
  /** Another install of the pack held the lock for `lockTimeoutMs`. */
  | 'ERR_INSTALL_LOCKED'
  /** The install folder, lock, rename or `current.txt` could not be written or read. */
  | 'ERR_INSTALL_IO'
  // static store builder and exportPack
  /** `buildStaticStore` found no `agent.yaml`. */
  | 'ERR_BUILD_NO_PACKS'
  /** A pack's manifest is invalid (`buildStaticStore`, `exportPack`). */
  | 'ERR_BUILD_PACK_INVALID'
  /** Two packs with one name and version. */
  | 'ERR_BUILD_DUPLICATE'
  /**
   * A symlink (or a `pack.sig` that is not a file) in a pack, or a name extraction refuses (`a:b`,
   * `CON`, case or NFC twins): no install would accept the archive.
   */
  | 'ERR_BUILD_UNSUPPORTED_ENTRY'
  /** A file changed while the archive was being built. */
  | 'ERR_BUILD_PACK_CHANGED'
  /** Reading the packs or writing the output failed. */
  | 'ERR_BUILD_IO'
  // lockfile (README "Lockfile")
  /** A lockfile that is not JSON, not `lockfileVersion: 1`, over its bounds, or has a malformed entry. */
  | 'ERR_LOCKFILE_INVALID'
  /** A lockfile could not be read or written (not: absent when recording, which starts an empty one). */
  | 'ERR_LOCKFILE_IO'
  /** A frozen install found different bytes or digests than the lock records (a moved tag, a re-published version). */
  | 'ERR_LOCK_MISMATCH'
  | OciErrorCode; // OCI registries: each documented in ./oci/errors.ts

export interface StoreErrorOptions {
  cause?: unknown;
  /** The archive entry path, URL or file the error is about, when there is one. */
  subject?: string | undefined;
  /** `ERR_SIGNATURE_REFUSED`: the verification result that was not `verified`. */
  verification?: unknown;
}

/**
 * The brand of every packwarden error: its class name under a `Symbol.for` key, set in the
 * constructor and not enumerable. `Symbol.for` gives the same symbol to every copy of every
 * packwarden package in the process (even in another `vm` context), so the guard below recognises
 * an error from another installed copy of this package, where `instanceof` cannot.
 */
const PACKWARDEN_ERROR = Symbol.for('packwarden.error');

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
    Object.defineProperty(this, PACKWARDEN_ERROR, { value: 'StoreError' });
  }
}

/** True for a `StoreError` from this copy of the package or from any other (see `PACKWARDEN_ERROR`). */
export function isStoreError(value: unknown): value is StoreError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { [PACKWARDEN_ERROR]?: unknown })[PACKWARDEN_ERROR] === 'StoreError'
  );
}

export function abortError(signal: AbortSignal | undefined): StoreError {
  return new StoreError('ERR_ABORTED', 'the operation was aborted', { cause: signal?.reason });
}
