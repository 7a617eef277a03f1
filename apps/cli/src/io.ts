import {
  terminalSafe as escapeControls,
  type TerminalSafeOptions,
} from '@packwarden/pack-manifest/resolve';

export type { TerminalSafeOptions };

/**
 * Whether the CLI runs as a GitHub Actions step (`GITHUB_ACTIONS=true` in its environment, set
 * by the runner; `run` sets it from `io.env`): the runner reads workflow commands from every line
 * the step prints, the legacy `##[command]` anywhere in a line.
 */
let inWorkflow = false;

/** Set by `run` from the command's environment (`io.env.GITHUB_ACTIONS === 'true'`). */
export function setWorkflowOutput(on: boolean): void {
  inWorkflow = on;
}

/**
 * `terminalSafe` of `@packwarden/pack-manifest` (controls and bidi characters shown as visible
 * escapes) for the CLI's human-readable output; and in a GitHub Actions step every `[` of the
 * value as `\x5b` too, so that no value (a folder a pull request named `x##[add-mask]verified`,
 * a pack's message) can form a legacy `##[command]`, which the runner finds anywhere in a line
 * and may match across characters its comparison ignores (action/report.mjs escapes `[` for the
 * same reason). `::command::` needs the start of a line, which no value begins. `--json` output
 * never goes through this.
 */
export function terminalSafe(text: string, options: TerminalSafeOptions = {}): string {
  const safe = escapeControls(text, options);
  return inWorkflow ? safe.replace(/\[/g, '\\x5b') : safe;
}

/** An output stream as the CLI uses it; `hasColors` is Node's `tty.WriteStream#hasColors`. */
export interface CliOutput {
  write(chunk: string): unknown;
  isTTY?: boolean;
  hasColors?(env?: Record<string, string | undefined>): boolean;
}

/** Everything a command touches in the outside world, so tests can drive the CLI in-process. */
export interface CliIo {
  stdout: CliOutput;
  stderr: CliOutput;
  env: Record<string, string | undefined>;
  cwd: string;
}

/**
 * Whether to colour what goes to `stream`: the stream's own `hasColors(env)` on a terminal (Node
 * applies NO_COLOR, FORCE_COLOR, NODE_DISABLE_COLORS and TERM there), and on a pipe or file only
 * when FORCE_COLOR asks for it (any value but 0 or false, as Node reads it).
 */
export function useColors(io: CliIo, stream: CliOutput = io.stdout): boolean {
  if (typeof stream.hasColors === 'function') {
    // A terminal that does not name itself (no TERM: some supervisors and bare ptys) keeps the
    // colours a terminal always had here; NO_COLOR, FORCE_COLOR and TERM=dumb still decide.
    return stream.hasColors(io.env.TERM === undefined ? { ...io.env, TERM: 'xterm' } : io.env);
  }
  const force = io.env.FORCE_COLOR;
  return force !== undefined && force !== '0' && force.toLowerCase() !== 'false';
}

export function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() };
}

/** Versioned JSON output: every `--json` document carries `schemaVersion` first. */
export const JSON_SCHEMA_VERSION = 1;

export function printJson(io: CliIo, value: Record<string, unknown>): void {
  io.stdout.write(`${JSON.stringify({ schemaVersion: JSON_SCHEMA_VERSION, ...value }, null, 2)}\n`);
}
