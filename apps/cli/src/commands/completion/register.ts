import { Argument, type Command } from 'commander';
import type { CommandContext } from '../../context.js';
import { addExamples } from '../../help.js';

/** `packwarden completion bash|zsh|fish`: a completion script generated from the command tree. */
export function registerCompletionCommand(program: Command, { io, state }: CommandContext): void {
  addExamples(
    program
      .command('completion')
      .description('Print a shell completion script (bash, zsh or fish)')
      .addArgument(new Argument('<shell>', 'the shell').choices(['bash', 'zsh', 'fish'])),
    [
      'source <(packwarden completion bash)   # bash, this shell',
      'packwarden completion zsh > "${fpath[1]}/_packwarden"   # zsh (uses bashcompinit)',
      'packwarden completion fish > ~/.config/fish/completions/packwarden.fish',
    ],
  ).action(async (shell: 'bash' | 'zsh' | 'fish') => {
    const { completionScript } = await import('./script.js');
    io.stdout.write(completionScript(program, shell));
    state.exitCode = 0;
  });
}
