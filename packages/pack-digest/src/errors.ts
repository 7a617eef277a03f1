/**
 * Every way computing or checking a pack digest can fail. The codes are API: each names one
 * refusal and is never reused for another.
 */
export type PackDigestErrorCode =
  /** The pack root does not exist. */
  | 'ERR_DIGEST_ROOT_NOT_FOUND'
  /** The pack root is not a directory. */
  | 'ERR_DIGEST_ROOT_NOT_DIRECTORY'
  /** A FIFO, socket or device node (spec rule 3). `fileType` says which. */
  | 'ERR_DIGEST_UNSUPPORTED_TYPE'
  /** A file or folder name whose bytes are not valid UTF-8 (spec rule 3). */
  | 'ERR_DIGEST_INVALID_UTF8_NAME'
  /** A name containing a byte 0x00–0x1F or 0x7F (spec rule 3). */
  | 'ERR_DIGEST_CONTROL_CHARACTER'
  /** Two names in one folder that are equal after Unicode NFC normalisation (spec rule 3). */
  | 'ERR_DIGEST_NFC_COLLISION'
  /** More entries than `maxEntries`. */
  | 'ERR_DIGEST_TOO_MANY_ENTRIES'
  /** More folders below the root than `maxFolders`. */
  | 'ERR_DIGEST_TOO_MANY_FOLDERS'
  /** Folders nested deeper than `maxDepth`. */
  | 'ERR_DIGEST_TOO_DEEP'
  /** A path longer than `maxPathBytes` UTF-8 bytes. */
  | 'ERR_DIGEST_PATH_TOO_LONG'
  /** More bytes of file content than `maxTotalBytes`, judged from sizes before reading. */
  | 'ERR_DIGEST_TOO_LARGE'
  /** A file was replaced, grew or shrank while it was being read. */
  | 'ERR_DIGEST_TREE_CHANGED'
  /** The operating system refused to read something (permissions, I/O error). */
  | 'ERR_DIGEST_IO'
  /** The caller's AbortSignal fired. */
  | 'ERR_DIGEST_ABORTED'
  /** A manifest line is not `<64 hex> <f|x|l> <path>` with a canonical path. */
  | 'ERR_DIGEST_MANIFEST_LINE'
  /** Manifest lines are not in strictly increasing UTF-8 byte order of their paths. */
  | 'ERR_DIGEST_MANIFEST_ORDER';

export type UnsupportedFileType =
  'fifo' | 'socket' | 'character-device' | 'block-device' | 'unknown';

export interface PackDigestErrorOptions {
  /** The pack-relative path the error is about, when there is one. */
  path?: string;
  fileType?: UnsupportedFileType;
  cause?: unknown;
}

/**
 * The brand of every packwarden error: its class name under a `Symbol.for` key, set in the
 * constructor and not enumerable. `Symbol.for` gives the same symbol to every copy of every
 * packwarden package in the process (even in another `vm` context), so the guard below recognises
 * an error from another installed copy of this package, where `instanceof` cannot.
 */
const PACKWARDEN_ERROR = Symbol.for('packwarden.error');

export class PackDigestError extends Error {
  override readonly name = 'PackDigestError';
  readonly code: PackDigestErrorCode;
  readonly path: string | undefined;
  readonly fileType: UnsupportedFileType | undefined;

  constructor(code: PackDigestErrorCode, message: string, options: PackDigestErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.path = options.path;
    this.fileType = options.fileType;
    Object.defineProperty(this, PACKWARDEN_ERROR, { value: 'PackDigestError' });
  }
}

/** True for a `PackDigestError` from this copy of the package or from any other (see `PACKWARDEN_ERROR`). */
export function isPackDigestError(value: unknown): value is PackDigestError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { [PACKWARDEN_ERROR]?: unknown })[PACKWARDEN_ERROR] === 'PackDigestError'
  );
}
