/** Everything a command touches in the outside world, so tests can drive the CLI in-process. */
export interface CliIo {
  stdout: { write(chunk: string): unknown; isTTY?: boolean };
  stderr: { write(chunk: string): unknown; isTTY?: boolean };
  env: Record<string, string | undefined>;
  cwd: string;
}

export function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() };
}

/** Versioned JSON output: every `--json` document carries `schemaVersion` first. */
export const JSON_SCHEMA_VERSION = 1;

export function printJson(io: CliIo, value: Record<string, unknown>): void {
  io.stdout.write(`${JSON.stringify({ schemaVersion: JSON_SCHEMA_VERSION, ...value }, null, 2)}\n`);
}
