import { Command, CommanderError } from 'commander';
import { registerPackCommands, registerTrustCommands } from './commands/pack.js';
import { registerStoreCommands } from './commands/store.js';
import { registerSandboxCommands } from './commands/sandbox.js';
import { describeError, EXIT } from './errors.js';
import type { CliIo } from './io.js';
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

/** Runs the CLI on `argv` (without `node` and the script) and returns the exit code. */
export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  const state: RunState = { exitCode: EXIT.ok };
  const program = createProgram(io, state);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return state.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version')
        return EXIT.ok;
      // Commander already printed the error (or the help, for a bare command group).
      return EXIT.usage;
    }
    const described = describeError(error);
    io.stderr.write(`packwarden: ${described.message}\n`);
    if (described.hint) io.stderr.write(`hint: ${described.hint}\n`);
    return described.exitCode;
  }
}
