import { Command, CommanderError } from 'commander';
import { registerEngineCommands } from './commands/engine/register.js';
import { registerCompletionCommand } from './commands/completion/register.js';
import { registerEnvCommand } from './commands/env/register.js';
import { registerPackCommands } from './commands/pack/register.js';
import { registerSandboxCommands } from './commands/sandbox/register.js';
import { registerStoreCommands } from './commands/store/register.js';
import { registerTrustCommands } from './commands/trust/register.js';
import type { CommandContext, RunState } from './context.js';
import { describeError, EXIT } from './errors.js';
import { addExamples, helpConfiguration } from './help.js';
import { JSON_SCHEMA_VERSION, setWorkflowOutput, terminalSafe, type CliIo } from './io.js';
import { VERSION } from './version.js';

export type { RunState } from './context.js';

export function createProgram(io: CliIo, state: RunState): Command {
  const program = new Command('packwarden');
  program
    .description('Digest, sign, verify, install and run Agent Packs.')
    .version(VERSION, '-V, --version')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      // Commander's errors quote the arguments (`unknown option '…'`), which scripts build from
      // folder and pack names: shown, never obeyed by the terminal, like every other message.
      outputError: (text, write) => write(terminalSafe(text, { multiline: true })),
    })
    .showHelpAfterError()
    // Before any subcommand exists: commands copy their parent's help layout when created.
    .configureHelp(helpConfiguration)
    .addHelpText(
      'after',
      `
Exit codes: 0 success, 1 the pack is missing, invalid or refused, 2 bad usage or configuration;
"pack verify" adds 3–7 (see "packwarden pack verify --help").
Every command that reports something takes --json (a versioned document on stdout; on failure
{schemaVersion, error {code, message, hint}, exitCode}). "packwarden env" lists the variables.
"packwarden <command> --help" ends with examples; required options say (required).
Docs: https://github.com/packwarden/packwarden#readme`,
    );
  addExamples(program, [
    'packwarden pack keygen --kid release-2026 -o release.pem',
    'packwarden pack sign ./my-pack --key release.pem --kid release-2026',
    'packwarden pack verify ./my-pack --keys release.keys.json',
    'packwarden pack verify --all ./agent-packs --keys release.keys.json --require-signed',
  ]);
  const context: CommandContext = { io, state };
  registerPackCommands(program, context);
  registerTrustCommands(program, context);
  registerStoreCommands(program, context);
  registerSandboxCommands(program, context);
  registerEngineCommands(program, context);
  registerEnvCommand(program, context);
  registerCompletionCommand(program, context);
  return program;
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
  setWorkflowOutput(io.env.GITHUB_ACTIONS === 'true');
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
