export { createProgram, run } from './program.js';
export type { RunState } from './program.js';
export { processIo, JSON_SCHEMA_VERSION, terminalSafe, useColors } from './io.js';
export type { CliIo, CliOutput, TerminalSafeOptions } from './io.js';
export { CliError, describeError, EXIT } from './errors.js';
export type { CliErrorCode } from './errors.js';
export { VERSION } from './version.js';
