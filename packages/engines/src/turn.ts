import type { LogLevel, QuestionOutcome } from '@packwarden/runner-host';
import type { TurnFileAccess } from './permissions.js';

/**
 * How a custom engine reports a turn: the AgentHippo Custom Engine V2 `Emitter`
 * (`engine-contract.d.ts` of the AgentHippo store), whose calls are positional. Every method
 * returns a promise: await it, and a slow driver slows the engine down instead of filling memory.
 * The object forms (`toolStart({ toolCallId, name, input })`, …), `warning`, `session` and `log`
 * are packwarden additions.
 */
export interface CustomEngineEmitter {
  text(delta: string): Promise<void>;
  thinking(delta: string): Promise<void>;
  toolStart(toolName: string, input?: string, toolCallId?: string): Promise<void>;
  toolStart(event: { toolCallId: string; name: string; input?: unknown }): Promise<void>;
  toolEnd(toolName: string, toolCallId: string, result?: string, isError?: boolean): Promise<void>;
  toolEnd(event: {
    toolCallId: string;
    name: string;
    output?: unknown;
    isError?: boolean;
  }): Promise<void>;
  progress(message: string): Promise<void>;
  question(payload: CustomEngineQuestion): Promise<CustomEngineQuestionAnswer>;
  /** A non-fatal error: reported as a warning; the turn fails if `run` ends without `done()`. */
  error(message: string | { message: string; code?: string; retryable?: boolean }): Promise<void>;
  /** The turn succeeded (optionally with the engine's resumable session id). */
  done(result?: { nativeSessionId?: string }): Promise<void>;
  warning(code: string, message: string): Promise<void>;
  session(nativeSessionId: string): Promise<void>;
  log(level: LogLevel, message: string): void;
}

/** A question as the contract asks it (options are labels, or objects with a `label`). */
export interface CustomEngineQuestion {
  questionId?: string;
  prompt: string;
  options?: Array<string | { label: string; description?: string; recommended?: boolean }>;
  multiSelect?: boolean;
  allowFreeText?: boolean;
  timeoutMs?: number;
}

/** The contract's answer, plus packwarden's `outcome` (the runner-host `QuestionOutcome`). */
export interface CustomEngineQuestionAnswer {
  outcome: QuestionOutcome['outcome'];
  selected: string[];
  freeText: string | null;
  declined?: boolean;
  timedOut?: boolean;
  cancelled?: boolean;
}

export interface CustomEngineLogger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Model routing of a turn. `apiKey` is non-enumerable: serialising the turn never shows it. */
export interface CustomEngineRouting {
  /** True when the model is reached through a gateway (the run frame gave a `baseUrl`). */
  readonly useLiteLLM: boolean;
  /** The run frame's `modelToken`. */
  readonly apiKey?: string;
  readonly baseUrl?: string;
  /** The same gateway as an OpenAI-compatible base URL (the run frame's `baseUrl`). */
  readonly openaiBaseUrl?: string;
}

export interface CustomEngineSession {
  /** Stable conversation key: the run frame's `sessionId`, else `default`. */
  readonly key: string;
  readonly chatSessionId: string;
  readonly contextSessionId: string;
  /** True when the driver named no session. */
  readonly isEphemeral: boolean;
  /** `<stateDir>/engines/<id>/home`: the engine's home, kept across runs. */
  readonly engineHomeDir: string;
  /** `<stateDir>/engines/<id>/sessions/<hash of key>`: per-conversation storage. */
  readonly engineSessionDir: string;
  readonly nativeSessionId?: string;
  /** packwarden: the run frame's `sessionId`, as before. */
  readonly sessionId?: string;
}

export interface CustomEngineAgent {
  /** The pack's `metadata.name`. */
  readonly id: string;
  readonly version: string;
  readonly rulesFilePath?: string;
  readonly skillsDir?: string;
  readonly rulesDir?: string;
}

/** The argument of `run(turn)` (AgentHippo Custom Engine V2, `CustomEngineTurn`). */
export interface CustomEngineTurn {
  readonly message: string;
  readonly modelId?: string;
  readonly workspaceRoot: string;
  readonly additionalDirectories: readonly string[];
  readonly permissions: { readonly fileAccess: TurnFileAccess };
  /** The environment for what the engine starts (non-enumerable on the turn). */
  readonly env: Readonly<Record<string, string>>;
  readonly routing: CustomEngineRouting;
  readonly session: CustomEngineSession;
  readonly agent: CustomEngineAgent;
  /** The pack's MCP servers (README, "The turn"). */
  readonly mcpServers: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly emitter: CustomEngineEmitter;
  readonly runtime: {
    readonly logger: CustomEngineLogger;
    /** Drop this engine instance after the turn: the next turn starts a fresh engine process. */
    readonly invalidateEngineInstance: () => void;
    readonly stateDir: string;
  };
  readonly signal: AbortSignal;
}

/**
 * What the engine class is constructed with (a packwarden addition; the store's engines take
 * nothing). A new instance is made when the run's `baseUrl` or `modelToken` changes.
 */
export interface CustomEngineInit {
  readonly engineDir: string;
  readonly manifest: Readonly<Record<string, unknown>>;
  readonly routing: CustomEngineRouting;
  readonly agent: { readonly id: string; readonly version: string };
  readonly stateDir: string;
}

/** The shape a custom engine module's `engineExport` constructs (or is). */
export interface CustomEngineInstance {
  run(turn: CustomEngineTurn): unknown;
  onMaintenance?(logger: CustomEngineLogger): unknown;
  dispose?(): unknown;
}
