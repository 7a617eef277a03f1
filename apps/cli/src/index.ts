export { createProgram, run } from './program.js';
export type { RunState } from './program.js';
export { processIo, JSON_SCHEMA_VERSION, terminalSafe } from './io.js';
export type { CliIo, TerminalSafeOptions } from './io.js';
export { CliError, describeError, EXIT } from './errors.js';
export type { CliErrorCode } from './errors.js';
export { VERSION } from './version.js';
