import type { Command } from 'commander';
import type { CommandContext } from '../../context.js';
import { addExamples } from '../../help.js';

/** `packwarden env`. */
export function registerEnvCommand(program: Command, { io, state }: CommandContext): void {
  addExamples(
    program
      .command('env')
      .description(
        'Every environment variable packwarden reads, its alias and where its value comes from',
      )
      .option('--json', 'print a JSON document'),
    ['packwarden env', 'PACKWARDEN_HOME=/srv/packwarden packwarden env --json'],
  ).action(async (options: { json?: boolean }) => {
    const { showEnv } = await import('./show.js');
    state.exitCode = await showEnv(io, options);
  });
}
