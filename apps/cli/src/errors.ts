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
  /**
   * The trust-root flags or variables are misconfigured (bad pin, unreadable keys file…), or given
   * where nothing would be verified (`run` / `sandbox` without a required signature).
   */
  | 'ERR_CLI_TRUST_CONFIG'
  /** A private key file is missing, unsafe (readable by others), too large or not writable. */
  | 'ERR_CLI_KEY_FILE'
  /** A key or key id given to `pack sign` was refused. */
  | 'ERR_CLI_SIGNING_KEY'
  /**
   * `run`: the sandbox child ended before it served the turn (its exit code is the document's;
   * its own messages are on stderr): a refused signature (3–7), isolation unavailable (8)…
   */
  | 'ERR_CLI_SANDBOX_BOOT';

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

/** The package an error comes from, by its class (the `packwarden.error` brand, else `name`). */
const PACKAGE_OF: Record<string, string> = {
  PackDigestError: 'pack-digest',
  PackManifestError: 'pack-manifest',
  PackSignatureError: 'pack-signature',
  TrustRootError: 'trust-root',
  StoreError: 'store-client',
  RunnerHostError: 'runner-host',
  EngineError: 'engines',
  SandboxError: 'sandbox',
};

function packageOf(error: Error): string | undefined {
  const brand = (error as unknown as Record<symbol, unknown>)[Symbol.for('packwarden.error')];
  return PACKAGE_OF[typeof brand === 'string' ? brand : error.name];
}

const DOCKER_LOGIN =
  'log in with `docker login HOST` (or set DOCKER_CONFIG to a folder holding config.json)';
const OCI_REFERENCE =
  'write oci://HOST[:PORT]/REPO[:TAG|@sha256:HEX]; --plain-http is for loopback registries only';

/**
 * Hints per package and code: the same code in two packages is two failures (store-client's
 * ERR_SIGNATURE_REFUSED is an install refused, sandbox's a pack it will not serve).
 */
const HINTS: Record<string, Record<string, string>> = {
  'pack-manifest': {
    ERR_PACK_NOT_FOUND:
      'run `packwarden pack list` to see installed packs, or pass a folder path such as ./my-pack',
    ERR_PACK_REF_INVALID:
      'pack names are kebab-case (code-reviewer, code-reviewer@1.2.0); write folders as paths (./my-pack)',
    ERR_MANIFEST_NOT_FOUND: 'a pack folder holds agent.yaml at its root',
    ERR_MANIFEST_INVALID:
      'fix the fields above; `packwarden pack schema` prints the JSON Schema of agent.yaml',
  },
  'pack-digest': {
    ERR_DIGEST_UNSUPPORTED_TYPE:
      'packs may hold only files, folders and symlinks: remove it from the pack',
    ERR_DIGEST_NFC_COLLISION:
      'rename one of the two: they are the same name on macOS and in the digest',
    ERR_DIGEST_CONTROL_CHARACTER: 'rename it: names with control characters are refused everywhere',
    ERR_DIGEST_INVALID_UTF8_NAME: 'rename it to valid UTF-8',
  },
  'store-client': {
    ERR_ALREADY_INSTALLED:
      'pass --force to replace it, or install another version with <slug>@<version>',
    ERR_SIGNATURE_REFUSED:
      'only packs whose pack.sig verifies against your trust root are installed with --require-signed',
    ERR_OCI_REF_INVALID: OCI_REFERENCE,
    ERR_OCI_PLAIN_HTTP_REFUSED: OCI_REFERENCE,
    ERR_OCI_DOCKER_CONFIG_INVALID: DOCKER_LOGIN,
    ERR_OCI_AUTH_CHALLENGE_INVALID: DOCKER_LOGIN,
    ERR_OCI_TOKEN_FAILED: DOCKER_LOGIN,
    ERR_OCI_AUTH_FAILED: DOCKER_LOGIN,
  },
};

/**
 * Library failures the user fixes in their own configuration, which end with exit 2 ("usage or
 * local misconfiguration") while keeping their library code: an unreadable PACKWARDEN_* variable
 * (pack-manifest's ERR_ENV_HOME_INVALID, ERR_ENV_FLAG_INVALID), a bad OCI reference, --plain-http
 * off loopback, an unreadable Docker config.json, credentials the registry refuses
 * (packages/store-client/OCI.md "Errors"). Digest, size, manifest and network failures stay 1.
 */
const USAGE_CODES: Record<string, ReadonlySet<string>> = {
  // A PACKWARDEN_* variable that cannot be read (a relative PACKWARDEN_HOME, a yes/no setting
  // such as PACKWARDEN_REQUIRE_SIGNED_PACK=required) is the user's configuration, as a bad flag
  // is: exit 2 whichever command or library reads it first, never a pack's failure (1).
  'pack-manifest': new Set(['ERR_ENV_HOME_INVALID', 'ERR_ENV_FLAG_INVALID']),
  'store-client': new Set([
    'ERR_OCI_REF_INVALID',
    'ERR_OCI_PLAIN_HTTP_REFUSED',
    'ERR_OCI_DOCKER_CONFIG_INVALID',
    'ERR_OCI_AUTH_CHALLENGE_INVALID',
    'ERR_OCI_TOKEN_FAILED',
    'ERR_OCI_AUTH_FAILED',
  ]),
};

/**
 * The one place library errors become exit codes and messages. Library errors carry stable
 * `ERR_*` codes; anything else is a bug or an environment failure and is reported as such.
 */
export function describeError(error: unknown): {
  message: string;
  code?: string | undefined;
  hint?: string | undefined;
  exitCode: number;
} {
  if (error instanceof CliError)
    return { message: error.message, code: error.code, hint: error.hint, exitCode: error.exitCode };
  if (isCoded(error) && error.code.startsWith('ERR_')) {
    const from = packageOf(error as unknown as Error);
    const hint = from === undefined ? undefined : HINTS[from]?.[error.code];
    return {
      message: error.message,
      code: error.code,
      ...(hint === undefined ? {} : { hint }),
      exitCode:
        from !== undefined && USAGE_CODES[from]?.has(error.code) ? EXIT.usage : EXIT.failure,
    };
  }
  return {
    message: error instanceof Error ? error.message : String(error),
    exitCode: EXIT.failure,
  };
}
