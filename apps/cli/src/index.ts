export { createProgram, run } from './program.js';
export type { RunState } from './program.js';
export { processIo, JSON_SCHEMA_VERSION, useColors } from './io.js';
// The pure escaper (what the CLI adds in a GitHub Actions step is its own output's concern).
export { terminalSafe } from '@packwarden/pack-manifest/resolve';
export type { CliIo, CliOutput, TerminalSafeOptions } from './io.js';
export { CliError, describeError, EXIT } from './errors.js';
export type { CliErrorCode } from './errors.js';
export { VERSION } from './version.js';
