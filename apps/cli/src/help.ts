import { Help, type Argument, type Command, type HelpConfiguration, type Option } from 'commander';

/** How an argument reads in help: `<pack>` is required, `[ref]` optional, `…...` repeatable. */
function argumentSyntax(argument: Argument): string {
  const name = `${argument.name()}${argument.variadic ? '...' : ''}`;
  return argument.required ? `<${name}>` : `[${name}]`;
}

/**
 * The help layout of every command (issue 13 item 4: "required options marked"). Commander hides
 * mandatory options inside `[options]` and prints argument names bare, so a reader cannot tell
 * what must be given; here the usage line names each mandatory option, the option list starts
 * its description with `(required)` (apps/cli/README.md "Commands"), and arguments keep their
 * `<required>` / `[optional]` brackets. An option needed only with another flag says so in its
 * own description.
 */
export const helpConfiguration: HelpConfiguration = {
  commandUsage(this: Help, command: Command): string {
    const usage = Help.prototype.commandUsage.call(this, command);
    const mandatory = command.options
      .filter((option) => option.mandatory)
      .map((option) => option.flags.replace(/^-\w, /, ''));
    if (mandatory.length === 0) return usage;
    return usage.replace('[options]', `[options] ${mandatory.join(' ')}`);
  },
  optionDescription(this: Help, option: Option): string {
    const description = Help.prototype.optionDescription.call(this, option);
    return option.mandatory ? `(required) ${description}` : description;
  },
  argumentTerm: argumentSyntax,
};

/**
 * Ends a command's help with "Examples:", one real invocation per line (a note after `#`). Every
 * runnable command calls this last, so the examples close its help; test/help.test.ts parses each
 * example against the command tree, so a renamed flag or a missing required option fails there.
 */
export function addExamples<T extends Command>(command: T, examples: readonly string[]): T {
  command.addHelpText('after', `\nExamples:\n${examples.map((line) => `  ${line}`).join('\n')}`);
  return command;
}
