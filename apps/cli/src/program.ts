import { Command, CommanderError } from 'commander';
import { registerPackCommands, registerTrustCommands } from './commands/pack.js';
import { registerStoreCommands } from './commands/store.js';
import { registerSandboxCommands } from './commands/sandbox.js';
import { describeError, EXIT } from './errors.js';
import { printJson, terminalSafe, type CliIo } from './io.js';
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
Every command that reports something takes --json (a versioned document on stdout).
Docs: https://github.com/packwarden/packwarden#readme`,
    );
  registerPackCommands(program, io, state);
  registerTrustCommands(program, io, state);
  registerStoreCommands(program, io, state);
  registerSandboxCommands(program, io, state);
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
 * The one error document every `--json` failure prints on stdout (README "JSON output"), so a
 * script reading stdout always gets JSON: `{schemaVersion, error: {code, message, hint}, exitCode}`.
 */
function printJsonError(
  io: CliIo,
  error: { code: string; message: string; hint?: string | undefined },
  exitCode: number,
): void {
  printJson(io, {
    error: { code: error.code, message: error.message, hint: error.hint ?? null },
    exitCode,
  });
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
