import type { KillRequest, RunnerEngine } from '@packwarden/runner-host';
import type { EngineRuntime } from './runtime.js';

/** A runner-host engine loaded for a pack, with an optional hard stop for the host's kill hook. */
export interface PackEngine extends RunnerEngine<EngineRuntime> {
  /** Called by the host's `kill` hook: stop whatever still runs for `request.runId`, now. */
  kill?(request: KillRequest): void;
}

/** Who the pack is, and what it declares, as engines need it. */
export interface PackIdentity {
  /** `metadata.name` and `metadata.version`. */
  readonly id: string;
  readonly version: string;
  /** `spec.permissions.fileAccess`, the ceiling of every turn. */
  readonly fileAccess?: 'read-only' | 'workspace-write' | 'full';
  /** `spec.model`. */
  readonly model?: string;
}
