/** Every way loading or resolving a pack can fail. Codes are API: documented, never reused. */
export type PackManifestErrorCode =
  /** The folder has no `agent.yaml`. */
  | 'ERR_MANIFEST_NOT_FOUND'
  /** `agent.yaml` is a symlink, folder or device: refused, so nothing outside the pack is read. */
  | 'ERR_MANIFEST_NOT_REGULAR_FILE'
  /**
   * `agent.yaml` (or the text given to `parsePackManifest`) is larger than `maxBytes`, or grew
   * while it was being read.
   */
  | 'ERR_MANIFEST_TOO_LARGE'
  /**
   * `agent.yaml` is not valid UTF-8, not YAML, more than one YAML document, or YAML the loader
   * does not interpret: a duplicate key (also `1` and `"1"`), a collection or alias as a key, an
   * unknown tag or one outside the YAML 1.2 core schema (`!!binary`, `!!merge`…), a `<<` key, an
   * alias inside the collection it names, `.nan` / `.inf`, more than 100 aliases, a `%YAML`
   * directive naming another version than 1.2.
   */
  | 'ERR_MANIFEST_YAML'
  /**
   * `agent.yaml` nests collections more than `MANIFEST_MAX_NESTING` (64) levels deep; refused
   * before the YAML library composes it, so deep input can never exhaust the stack.
   */
  | 'ERR_MANIFEST_TOO_DEEP'
  /**
   * A mapping or list in `agent.yaml` has more than `MANIFEST_MAX_COLLECTION_ENTRIES` (1,000)
   * entries, or all of them more than `MANIFEST_MAX_TOTAL_ENTRIES` (10,000); refused before
   * composing, whose duplicate-key check is quadratic.
   */
  | 'ERR_MANIFEST_TOO_MANY_ENTRIES'
  /** The YAML is fine but does not follow the Agent Pack Specification v1; see `issues`. */
  | 'ERR_MANIFEST_INVALID'
  /** The operating system refused to read the manifest or a pack folder. */
  | 'ERR_MANIFEST_IO'
  /** A pack reference is neither a path nor a valid `name[@version]`. */
  | 'ERR_PACK_REF_INVALID'
  /** No pack by that name (or version) in the workspace or `$PACKWARDEN_HOME`. */
  | 'ERR_PACK_NOT_FOUND'
  /** `current.txt` of an installed pack is missing, empty or not a version. */
  | 'ERR_PACK_CURRENT_INVALID'
  /**
   * `findPackFolders`: the tree holds more packs or folders than its bounds allow, a pack
   * folder deeper than `maxDepth`, or a symlinked folder leading to folders deeper than that.
   */
  | 'ERR_PACK_SEARCH_TOO_LARGE'
  /**
   * `findPackFolders`: a symlink in the tree leads to a pack folder, or to a folder holding one,
   * which it does not list from.
   */
  | 'ERR_PACK_SEARCH_SYMLINK'
  /**
   * `listInstalledPacks`: the workspace's `.packwarden/agents` or `$PACKWARDEN_HOME/agents` holds
   * more pack names than `maxPacks`; a shorter list would leave out a pack that runs by name.
   */
  | 'ERR_PACK_LIST_TOO_LARGE'
  /**
   * A yes/no variable (`PACKWARDEN_REQUIRE_SIGNED_PACK`…) holds something other than 1, true,
   * yes, on, 0, false, no, off: refused rather than read as "off".
   */
  | 'ERR_ENV_FLAG_INVALID'
  /** `PACKWARDEN_HOME` is relative, or no absolute home folder can be found (`HOME` empty or relative). */
  | 'ERR_ENV_HOME_INVALID'
  /** `parseStrictJson`: the text is not one JSON value (RFC 8259), or has an escaped lone surrogate. */
  | 'ERR_JSON_SYNTAX'
  /** `parseStrictJson`: an object repeats a member name, however it is spelled (`"a"`, `"\u0061"`). */
  | 'ERR_JSON_DUPLICATE_KEY'
  /** `parseStrictJson`: arrays and objects nest deeper than `maxDepth`. */
  | 'ERR_JSON_TOO_DEEP'
  /** `parseStrictJson`: the text is longer than `maxBytes` in UTF-8. */
  | 'ERR_JSON_TOO_LARGE';

export interface ManifestIssue {
  /** Dotted field path, e.g. `metadata.version` (empty for the document itself). */
  field: string;
  message: string;
  /** 1-based line and column in `agent.yaml`, when known. */
  line?: number;
  column?: number;
}

export interface PackManifestErrorOptions {
  /** The file or folder the error is about. */
  file?: string;
  issues?: ManifestIssue[];
  cause?: unknown;
}

/**
 * The brand of every packwarden error: its class name under a `Symbol.for` key, set in the
 * constructor and not enumerable. `Symbol.for` gives the same symbol to every copy of every
 * packwarden package in the process (even in another `vm` context), so the guard below recognises
 * an error from another installed copy of this package, where `instanceof` cannot.
 */
const PACKWARDEN_ERROR = Symbol.for('packwarden.error');

export class PackManifestError extends Error {
  override readonly name = 'PackManifestError';
  readonly code: PackManifestErrorCode;
  readonly file: string | undefined;
  readonly issues: ManifestIssue[];

  constructor(
    code: PackManifestErrorCode,
    message: string,
    options: PackManifestErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.file = options.file;
    this.issues = options.issues ?? [];
    Object.defineProperty(this, PACKWARDEN_ERROR, { value: 'PackManifestError' });
  }
}

/** True for a `PackManifestError` from this copy of the package or from any other (see `PACKWARDEN_ERROR`). */
export function isPackManifestError(value: unknown): value is PackManifestError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { [PACKWARDEN_ERROR]?: unknown })[PACKWARDEN_ERROR] === 'PackManifestError'
  );
}

/** `file:line:column field: message`, the way compilers print it. */
export function formatManifestIssue(issue: ManifestIssue, file = 'agent.yaml'): string {
  const where = issue.line === undefined ? file : `${file}:${issue.line}:${issue.column ?? 1}`;
  return issue.field === ''
    ? `${where} ${issue.message}`
    : `${where} ${issue.field}: ${issue.message}`;
}
