/** A failure the CLI reports as it is, with the exit code it should end with. */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    message: string,
    readonly exitCode: number,
    readonly hint?: string,
  ) {
    super(message);
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
    return { message: error.message, hint: error.hint, exitCode: error.exitCode };
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
