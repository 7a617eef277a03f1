import type { TurnFileAccess } from './permissions.js';

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
  /**
   * The file access of the turn the command serves (after the run frame narrowed the pack's
   * declaration). A wrapper may only narrow its own walls by it: the workspace stays read-only
   * for anything but `workspace-write` and `full`. Absent: the wrapper's own policy.
   */
  fileAccess?: TurnFileAccess;
}

export type CommandWrapper = (command: WrappableCommand) => WrappableCommand;
