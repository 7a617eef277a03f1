import type { EngineFileAccess, LogLevel, QuestionOutcomeKind } from './frames.js';

/**
 * What an engine learns about one run. `modelToken`, `turnEnv` and `gatewaySessionKey` are
 * present but non-enumerable: spreading, `JSON.stringify` or `util.inspect` of the options never
 * carries them, and the host scrubs their values from everything it sends anyway.
 */
export interface EngineRunOptions {
  readonly runId: string;
  readonly engineId: string;
  /**
   * Identifies the host session (one driver connection) this run belongs to: unique per
   * `startRunnerHost`, the same for all its runs. Key per-session engine state (an instance
   * bound to a token) by it, never share it across sessions, and release it in `endSession`.
   * Always set by `startRunnerHost`; absent only when an engine is called directly.
   */
  readonly hostSessionId?: string;
  readonly modelId?: string;
  readonly sessionId?: string;
  /** The engine's own resumable session id: from the run frame, else the host's current one. */
  readonly nativeSessionId?: string;
  /**
   * File access the driver asked for, in the contract's words (`read-only`, `workspace-write`,
   * `full`, or `none`); absent when the driver sent none. A request, not a grant: the embedder
   * narrows it to what the pack declares.
   */
  readonly permissions?: { readonly fileAccess: EngineFileAccess };
  /** Advisory only: the embedder's own workspace is authoritative. */
  readonly workspaceRoot?: string;
  readonly additionalDirectories?: readonly string[];
  readonly baseUrl?: string;
  readonly analyticsUserId?: string;
  readonly modelToken?: string;
  readonly turnEnv?: Readonly<Record<string, string>>;
  readonly gatewaySessionKey?: string;
}

export interface ToolStartEvent {
  toolCallId: string;
  name: string;
  input?: unknown;
}

export interface ToolEndEvent {
  toolCallId: string;
  name: string;
  output?: unknown;
  isError?: boolean;
}

export interface QuestionRequest {
  prompt: string;
  options?: readonly string[];
  /** Shorter than the host's `questionTimeoutMs` if set; never longer. */
  timeoutMs?: number;
}

export type QuestionOutcome =
  | { outcome: 'answered'; selected: string[]; freeText?: string }
  | { outcome: Exclude<QuestionOutcomeKind, 'answered'> };

/**
 * How an engine reports a run. Every method returns a promise that resolves when the host can
 * take more output: await it, and a slow driver slows the engine down instead of filling memory.
 * Calls after the run ended are ignored.
 */
export interface EngineEmitter {
  text(delta: string): Promise<void>;
  thinking(delta: string): Promise<void>;
  toolStart(event: ToolStartEvent): Promise<void>;
  toolEnd(event: ToolEndEvent): Promise<void>;
  progress(message: string): Promise<void>;
  warning(code: string, message: string): Promise<void>;
  /** Reports the engine's resumable session id; the host returns it in the terminal frame. */
  session(nativeSessionId: string): Promise<void>;
  /** Asks the driver; resolves with its answer, or declined / timeout / cancelled. */
  question(request: QuestionRequest): Promise<QuestionOutcome>;
  /** An out-of-band diagnostic (a `log` frame and the host's logger), scrubbed like the rest. */
  log(level: LogLevel, message: string): void;
}

/** Why the host calls {@link RunnerEngine.onMaintenance}. */
export interface MaintenanceEvent {
  /** `after_run`: a run of this engine has ended and its terminal frame is queued. */
  reason: 'after_run';
  runId: string;
}

/**
 * An engine behind the host. `stream` resolving ends the run with `result{end_turn}`, throwing
 * or rejecting ends it with `failed` (an error carrying a string `code` and boolean `retryable`
 * keeps them), and a cancelled run always ends with `result{cancelled}`.
 */
export interface RunnerEngine<TRuntime = unknown> {
  readonly id: string;
  readonly displayName: string;
  stream(
    message: string,
    options: EngineRunOptions,
    emitter: EngineEmitter,
    runtime: TRuntime,
    signal: AbortSignal,
  ): Promise<void>;
  onMaintenance?(event: MaintenanceEvent, runtime: TRuntime): void | Promise<void>;
  /**
   * The host session `hostSessionId` has ended: none of its runs is active or will start. Release
   * what belongs to that session only; other sessions may be mid-turn on this engine.
   */
  endSession?(hostSessionId: string, runtime: TRuntime): void | Promise<void>;
  /** The engine is no longer used by any session (see `disposeEngines`). */
  dispose?(): void | Promise<void>;
}
