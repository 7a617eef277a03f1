/**
 * The seam through which confinement reaches every child process an engine starts (exec
 * commands, the out-of-process host of custom engines, vendor CLIs): the sandbox passes a
 * wrapper that rewrites a command into its confined form (for example `bwrap … -- <command>`)
 * and its environment. Engines call it for every spawn and never spawn around it.
 * Without a wrapper, a command runs as given (isolation `off`).
 */
export interface WrappableCommand {
  /** The program to start (an absolute path or a name looked up on PATH). */
  file: string;
  args: readonly string[];
  /** The working directory (the workspace for every engine). */
  cwd: string;
  /** The complete environment of the child; nothing else is inherited. */
  env: Record<string, string>;
}

export type CommandWrapper = (command: WrappableCommand) => WrappableCommand;
