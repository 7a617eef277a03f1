import type { CliIo } from './io.js';

/** Where an action leaves its exit code; commander has no return channel for it. */
export interface RunState {
  exitCode: number;
}

/**
 * What every command group's `register` receives: the outside world and the exit-code slot.
 * Command modules import this module and `shared/`, never `program.ts` or another group's
 * actions, so the import graph has no cycle (test/layout.test.ts).
 */
export interface CommandContext {
  io: CliIo;
  state: RunState;
}
