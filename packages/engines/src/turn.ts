import type {
  LogLevel,
  QuestionOutcome,
  QuestionRequest,
  ToolEndEvent,
  ToolStartEvent,
} from '@packwarden/runner-host';
import type { TurnFileAccess } from './permissions.js';

/**
 * How a custom engine reports a turn (AgentHippo Custom Engine V2). Every method returns a
 * promise: await it, and a slow driver slows the engine down instead of filling memory.
 * `warning`, `session` and `log` are packwarden additions.
 */
export interface CustomEngineEmitter {
  text(delta: string): Promise<void>;
  thinking(delta: string): Promise<void>;
  toolStart(event: ToolStartEvent): Promise<void>;
  toolEnd(event: ToolEndEvent): Promise<void>;
  progress(message: string): Promise<void>;
  question(request: QuestionRequest): Promise<QuestionOutcome>;
  /** Marks the turn as failed; it ends with `failed` once `run` returns. */
  error(error: unknown): Promise<void>;
  /** Marks the turn as done, optionally reporting the engine's resumable session id. */
  done(result?: { nativeSessionId?: string }): Promise<void>;
  warning(code: string, message: string): Promise<void>;
  session(nativeSessionId: string): Promise<void>;
  log(level: LogLevel, message: string): void;
}

export interface CustomEngineLogger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Model routing of a turn. `apiKey` is non-enumerable: serialising the turn never shows it. */
export interface CustomEngineRouting {
  /** True when the model is reached through a gateway (`baseUrl` was given). */
  readonly useLiteLLM: boolean;
  readonly apiKey?: string;
  readonly baseUrl?: string;
}

/** The argument of `run(turn)` (AgentHippo Custom Engine V2). */
export interface CustomEngineTurn {
  readonly message: string;
  readonly modelId?: string;
  readonly workspaceRoot: string;
  readonly additionalDirectories: readonly string[];
  readonly permissions: { readonly fileAccess: TurnFileAccess };
  /** The run frame's `turnEnv` (secret values; non-enumerable on the turn). */
  readonly env: Readonly<Record<string, string>>;
  readonly routing: CustomEngineRouting;
  readonly session: { readonly sessionId?: string; readonly nativeSessionId?: string };
  readonly agent: { readonly id: string; readonly version: string };
  /** The pack's system prompt (`spec.prompts.system`), when the engine asks for `promptInjection`. */
  readonly systemPrompt?: string;
  readonly emitter: CustomEngineEmitter;
  readonly runtime: { readonly logger: CustomEngineLogger; readonly stateDir: string };
  readonly signal: AbortSignal;
}

/** What the engine class is constructed with; a new instance is made when routing changes. */
export interface CustomEngineInit {
  readonly engineDir: string;
  readonly manifest: Readonly<Record<string, unknown>>;
  readonly routing: CustomEngineRouting;
  readonly agent: { readonly id: string; readonly version: string };
  readonly stateDir: string;
}

/** The shape a custom engine module's `engineExport` constructs. */
export interface CustomEngineInstance {
  run(turn: CustomEngineTurn): unknown;
  dispose?(): unknown;
}
