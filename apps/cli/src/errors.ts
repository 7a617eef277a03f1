/**
 * The CLI's own failures (library errors keep their packages' codes). Codes are API: they appear
 * in the `--json` error document; documented in apps/cli/README.md, never reused.
 */
export type CliErrorCode =
  /** Bad flags or arguments, including commander's own usage errors. */
  | 'ERR_CLI_USAGE'
  /** A failure of the CLI's own that has no more specific code. */
  | 'ERR_CLI_FAILED'
  /** A bare pack name names both a folder in the current directory and an installed pack. */
  | 'ERR_CLI_PACK_AMBIGUOUS'
  /** `pack verify --all DIR` found no pack folder under DIR: nothing was verified. */
  | 'ERR_CLI_NO_PACKS'
  /** The trust-root flags or variables are misconfigured (bad pin, unreadable keys file…). */
  | 'ERR_CLI_TRUST_CONFIG'
  /** A private key file is missing, unsafe (readable by others), too large or not writable. */
  | 'ERR_CLI_KEY_FILE'
  /** A key or key id given to `pack sign` was refused. */
  | 'ERR_CLI_SIGNING_KEY';

/** A failure the CLI reports as it is, with the exit code it should end with. */
export class CliError extends Error {
  override readonly name = 'CliError';
  readonly code: CliErrorCode;
  constructor(
    message: string,
    readonly exitCode: number,
    readonly hint?: string,
    options: { code?: CliErrorCode; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code ?? (exitCode === EXIT.usage ? 'ERR_CLI_USAGE' : 'ERR_CLI_FAILED');
  }
}

/** Exit codes shared by every command. */
export const EXIT = {
  ok: 0,
  /** The subject is missing, invalid or refused (a pack, a manifest, a digest). */
  failure: 1,
  /** Bad flags or arguments. */
  usage: 2,
} as const;

interface CodedError {
  code: string;
  message: string;
}

function isCoded(error: unknown): error is CodedError {
  return error instanceof Error && typeof (error as { code?: unknown }).code === 'string';
}

const HINTS: Record<string, string> = {
  ERR_PACK_NOT_FOUND:
    'run `packwarden pack list` to see installed packs, or pass a folder path such as ./my-pack',
  ERR_PACK_REF_INVALID:
    'pack names are kebab-case (code-reviewer, code-reviewer@1.2.0); write folders as paths (./my-pack)',
  ERR_MANIFEST_NOT_FOUND: 'a pack folder holds agent.yaml at its root',
  ERR_MANIFEST_INVALID:
    'fix the fields above; `packwarden pack schema` prints the JSON Schema of agent.yaml',
  ERR_DIGEST_UNSUPPORTED_TYPE:
    'packs may hold only files, folders and symlinks: remove it from the pack',
  ERR_DIGEST_NFC_COLLISION:
    'rename one of the two: they are the same name on macOS and in the digest',
  ERR_DIGEST_CONTROL_CHARACTER: 'rename it: names with control characters are refused everywhere',
  ERR_DIGEST_INVALID_UTF8_NAME: 'rename it to valid UTF-8',
  ERR_ALREADY_INSTALLED:
    'pass --force to replace it, or install another version with <slug>@<version>',
  ERR_SIGNATURE_REFUSED:
    'only packs whose pack.sig verifies against your trust root are installed with --require-signed',
};

/**
 * The one place library errors become exit codes and messages. Library errors carry stable
 * `ERR_*` codes; anything else is a bug or an environment failure and is reported as such.
 */
export function describeError(error: unknown): {
  message: string;
  code?: string;
  hint?: string;
  exitCode: number;
} {
  if (error instanceof CliError)
    return { message: error.message, code: error.code, hint: error.hint, exitCode: error.exitCode };
  if (isCoded(error) && error.code.startsWith('ERR_')) {
    return {
      message: error.message,
      code: error.code,
      hint: HINTS[error.code],
      exitCode: EXIT.failure,
    };
  }
  return {
    message: error instanceof Error ? error.message : String(error),
    exitCode: EXIT.failure,
  };
}
