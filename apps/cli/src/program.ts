import { Command, CommanderError } from 'commander';
import { registerPackCommands, registerTrustCommands } from './commands/pack.js';
import { registerStoreCommands } from './commands/store.js';
import { registerSandboxCommands } from './commands/sandbox.js';
import { describeError, EXIT } from './errors.js';
import { JSON_SCHEMA_VERSION, printJson, terminalSafe, type CliIo } from './io.js';
import { VERSION } from './version.js';

/** Where an action leaves its exit code; commander has no return channel for it. */
export interface RunState {
  exitCode: number;
}

export function createProgram(io: CliIo, state: RunState): Command {
  const program = new Command('packwarden');
  program
    .description('Digest, sign, verify, install and run Agent Packs.')
    .version(VERSION, '-V, --version')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
    .showHelpAfterError()
    .addHelpText(
      'after',
      `
Exit codes: 0 success, 1 the pack is missing, invalid or refused, 2 bad usage or configuration;
"pack verify" adds 3–7 (see "packwarden pack verify --help").
Every command that reports something takes --json (a versioned document on stdout; on failure
{schemaVersion, error {code, message, hint}, exitCode}). "packwarden env" lists the variables.

Examples:
  packwarden pack keygen --kid release-2026 -o release.pem
  packwarden pack sign ./my-pack --key release.pem --kid release-2026
  packwarden pack verify ./my-pack --keys release.keys.json
  packwarden pack verify --all ./agent-packs --keys release.keys.json --require-signed
Docs: https://github.com/packwarden/packwarden#readme`,
    );
  registerPackCommands(program, io, state);
  registerTrustCommands(program, io, state);
  registerStoreCommands(program, io, state);
  registerSandboxCommands(program, io, state);
  program
    .command('env')
    .description(
      'Every environment variable packwarden reads, its alias and where its value comes from',
    )
    .option('--json', 'print a JSON document')
    .action(async (options: { json?: boolean }) => {
      state.exitCode = await showEnv(io, options);
    });
  return program;
}

/**
 * The variables packwarden reads (apps/cli/README.md "Environment"), each also under its
 * `AGENTHIPPO_*` alias through pack-manifest's one lookup. Secrets are reported as set, never
 * shown.
 */
const VARIABLES: ReadonlyArray<{
  name: string;
  about: string;
  secret?: boolean;
  fallbacks?: readonly string[];
}> = [
  { name: 'HOME', about: 'state folder: installed packs, caches (default ~/.packwarden)' },
  { name: 'PACK_SIGNING_KEYS', about: 'trusted keys inline: {kid: PEM} JSON or a JWKS' },
  { name: 'PACK_JWKS_URL', about: 'trusted keys from a JWKS URL (use with PACK_JWKS_PINS)' },
  { name: 'PACK_JWKS_PINS', about: 'RFC 7638 thumbprints the JWKS keys must match' },
  { name: 'PACK_JWKS_MAX_STALE', about: 'how long a cached JWKS may serve when the URL fails' },
  { name: 'LEASE_URL', about: 'control plane; trusted keys from GET <origin>/api/keys' },
  { name: 'REQUIRE_SIGNED_PACK', about: 'yes/no: refuse packs whose pack.sig does not verify' },
  { name: 'ISOLATION', about: 'sandbox isolation: required, auto or off' },
  { name: 'STORE_URL', about: 'the store packs are installed from' },
  { name: 'STORE_REPO', about: 'GitHub repository of the AgentHippo store' },
  { name: 'GITHUB_API_URL', about: 'GitHub API for the AgentHippo store' },
  {
    name: 'GITHUB_TOKEN',
    about: 'token for the GitHub API (else GITHUB_TOKEN, GH_TOKEN)',
    secret: true,
    fallbacks: ['GITHUB_TOKEN', 'GH_TOKEN'],
  },
  { name: 'BASE_URL', about: 'model gateway base URL for `run`' },
  { name: 'MODEL_TOKEN', about: 'model token for `run`', secret: true },
];

async function showEnv(io: CliIo, options: { json?: boolean }): Promise<number> {
  const { lookupPackwardenEnv } = await import('@packwarden/pack-manifest/resolve');
  const rows = VARIABLES.map((variable) => {
    const warnings: string[] = [];
    const found = lookupPackwardenEnv(io.env, variable.name, warnings);
    const fallback = found
      ? undefined
      : variable.fallbacks?.find((name) => (io.env[name] ?? '').trim() !== '');
    const setBy = found?.variable ?? fallback ?? null;
    const raw = found?.value ?? (fallback === undefined ? undefined : io.env[fallback]);
    return {
      name: `PACKWARDEN_${variable.name}`,
      alias: `AGENTHIPPO_${variable.name}`,
      description: variable.about,
      secret: variable.secret === true,
      setBy,
      value: raw === undefined ? null : variable.secret ? '(hidden)' : raw,
      warnings,
    };
  });
  if (options.json) {
    printJson(io, { variables: rows });
    return EXIT.ok;
  }
  const width = Math.max(...rows.map((row) => row.name.length));
  for (const row of rows) {
    const value =
      row.value === null
        ? 'unset'
        : `${row.setBy === row.name ? '' : `from ${row.setBy}: `}${terminalSafe(row.value.length > 60 ? `${row.value.slice(0, 60)}…` : row.value)}`;
    io.stdout.write(
      `${row.name.padEnd(width)}  ${value}\n${' '.repeat(width + 2)}${row.description}; alias ${row.alias}\n`,
    );
    for (const warning of row.warnings)
      io.stdout.write(`${' '.repeat(width + 2)}warning: ${warning}\n`);
  }
  return EXIT.ok;
}

function indentedBlock(text: string): string {
  return terminalSafe(text, { multiline: true }).replace(/\n/g, '\n  ');
}

/** Whether the command line asks for JSON (`--json` before any `--`). */
function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).includes('--json');
}

/**
 * The one error document every `--json` failure prints on stdout (apps/cli/README.md "JSON
 * output"), so a script reading stdout always gets JSON:
 * `{schemaVersion, error: {code, message, hint}, exitCode}`.
 */
function printJsonError(
  io: CliIo,
  error: { code: string; message: string; hint?: string | undefined },
  exitCode: number,
): void {
  // One line: valid as the whole of stdout, and as the last line of `run --json`'s NDJSON.
  const document = {
    schemaVersion: JSON_SCHEMA_VERSION,
    error: { code: error.code, message: error.message, hint: error.hint ?? null },
    exitCode,
  };
  io.stdout.write(`${JSON.stringify(document)}\n`);
}

/** Runs the CLI on `argv` (without `node` and the script) and returns the exit code. */
export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  const state: RunState = { exitCode: EXIT.ok };
  const program = createProgram(io, state);
  const json = wantsJson(argv);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return state.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version')
        return EXIT.ok;
      // Commander already printed the error (or the help, for a bare command group).
      if (json) {
        const message = error.message.replace(/^error: /, '');
        printJsonError(
          io,
          { code: 'ERR_CLI_USAGE', message, hint: 'run the command with --help' },
          EXIT.usage,
        );
      }
      return EXIT.usage;
    }
    const described = describeError(error);
    if (json) {
      printJsonError(
        io,
        {
          code: described.code ?? 'ERR_CLI_FAILED',
          message: described.message,
          hint: described.hint,
        },
        described.exitCode,
      );
    }
    // Messages quote paths, names and values from packs and servers: shown, never obeyed, and
    // every continuation line indented, so a name holding a line feed cannot forge a line.
    io.stderr.write(`packwarden: ${indentedBlock(described.message)}\n`);
    if (described.hint) io.stderr.write(`hint: ${indentedBlock(described.hint)}\n`);
    return described.exitCode;
  }
}
