import * as z from 'zod';

/** Protocol versions this package speaks, newest last. */
export const SUPPORTED_PROTOCOLS: readonly number[] = [1];

/** A frame (one JSON line, without its `\n`) is at most 16 MiB. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

/**
 * Characters (UTF-16 code units) of a `runId`, `engineId` or `questionId`, and of a string ping
 * id: README "Frames" (`runId` 1–256 chars) and "Rules in detail", Run ids.
 */
export const MAX_ID_CHARS = 256;

// Objects strip unknown fields instead of rejecting them: unknown fields are ignored, never fatal.
const id = z.string().min(1).max(MAX_ID_CHARS);
const seq = z.number().int().positive();
const pingId = z.union([z.string().max(MAX_ID_CHARS), z.number()]);

/**
 * Whether `value` can be a run's id on the wire (a string of 1 to {@link MAX_ID_CHARS}
 * characters). The client refuses any other `runId` before sending it and the host never cuts
 * one to fit: both ends check with this one schema (README "Rules in detail", Run ids).
 */
export function isWireId(value: unknown): value is string {
  return id.safeParse(value).success;
}

/** Wire codes carried by `failed.error.code`, `fatal.code`, `warning.code` and `log.code`. */
export const WIRE_ERROR_CODES = [
  'not_initialized',
  'already_initialized',
  'unsupported_protocol',
  'busy',
  'unknown_engine',
  'duplicate_run',
  'invalid_frame',
  'invalid_json',
  'frame_too_large',
  'unterminated_frame',
  'unknown_run',
  'unknown_question',
  'invalid_answer',
  'engine_error',
  'output_overflow',
  'question_auto_declined',
  'question_limit',
  'host_lost',
  'too_many_secrets',
  'input_budget_exceeded',
  'too_many_connections',
  'hello_timeout',
] as const;

export const capabilitiesSchema = z.object({
  questions: z.boolean().optional(),
});
export type Capabilities = z.infer<typeof capabilitiesSchema>;

export const peerInfoSchema = z.object({
  name: z.string().max(256),
  version: z.string().max(256).optional(),
});
export type PeerInfo = z.infer<typeof peerInfoSchema>;

// ---- driver → host -------------------------------------------------------------------------

export const helloFrameSchema = z.object({
  type: z.literal('hello'),
  protocols: z.array(z.number().int()).max(64),
  capabilities: capabilitiesSchema.optional(),
  client: peerInfoSchema.optional(),
});
export type HelloFrame = z.infer<typeof helloFrameSchema>;

/**
 * File access words a driver may send (README "File access"): the contract's three, the same as
 * `agent.yaml` `spec.permissions.fileAccess`, and the first words of protocol v1 (`none`, `read`,
 * `write`), still accepted. Engines only ever see {@link EngineFileAccess}.
 */
export const fileAccessSchema = z.enum([
  'read-only',
  'workspace-write',
  'full',
  'none',
  'read',
  'write',
]);
export type FileAccess = z.infer<typeof fileAccessSchema>;

/** File access as an engine receives it: the contract's words, plus `none` (nothing at all). */
export type EngineFileAccess = 'none' | 'read-only' | 'workspace-write' | 'full';

const FILE_ACCESS_WORDS: Readonly<Record<FileAccess, EngineFileAccess>> = {
  none: 'none',
  read: 'read-only',
  write: 'workspace-write',
  'read-only': 'read-only',
  'workspace-write': 'workspace-write',
  full: 'full',
};
const FILE_ACCESS_RANK: Readonly<Record<EngineFileAccess, number>> = {
  none: 0,
  'read-only': 1,
  'workspace-write': 2,
  full: 3,
};

/**
 * The contract's word for a file access word of the wire (README "File access"): `read` is
 * `read-only`, `write` is `workspace-write`, the others are themselves. The one copy of this
 * table: engines and embedders that take a wire word map it with this.
 */
export function toEngineFileAccess(word: FileAccess): EngineFileAccess {
  return FILE_ACCESS_WORDS[word];
}

/** The narrower of two file access levels (`none` < `read-only` < `workspace-write` < `full`). */
export function narrowerFileAccess(a: EngineFileAccess, b: EngineFileAccess): EngineFileAccess {
  return FILE_ACCESS_RANK[b] < FILE_ACCESS_RANK[a] ? b : a;
}

/**
 * The engine-facing file access a run frame asks for: `permissions.fileAccess` and the bare
 * `fileAccess` (either may be sent), in the contract's words. When both are present and differ
 * the narrower wins, so an inconsistent frame can never obtain more than one of its fields asks.
 */
export function requestedFileAccess(frame: {
  permissions?: { fileAccess?: FileAccess | undefined } | undefined;
  fileAccess?: FileAccess | undefined;
}): EngineFileAccess | undefined {
  const asked = [frame.permissions?.fileAccess, frame.fileAccess]
    .filter((word): word is FileAccess => word !== undefined)
    .map(toEngineFileAccess);
  if (asked.length === 0) return undefined;
  return asked.reduce(narrowerFileAccess);
}

export const runFrameSchema = z.object({
  type: z.literal('run'),
  runId: id,
  message: z.string(),
  engineId: id.optional(),
  modelId: z.string().max(1024).optional(),
  sessionId: z.string().max(1024).optional(),
  nativeSessionId: z.string().max(1_048_576).optional(),
  permissions: z.object({ fileAccess: fileAccessSchema.optional() }).optional(),
  /** The same request as `permissions.fileAccess`; AgentHippo's driver sends either. */
  fileAccess: fileAccessSchema.optional(),
  workspaceRoot: z.string().max(4096).optional(),
  additionalDirectories: z.array(z.string().max(4096)).max(256).optional(),
  baseUrl: z.string().max(4096).optional(),
  modelToken: z.string().max(65_536).optional(),
  turnEnv: z.record(z.string(), z.string().max(65_536)).optional(),
  gatewaySessionKey: z.string().max(65_536).optional(),
  analyticsUserId: z.string().max(1024).optional(),
});
export type RunFrame = z.infer<typeof runFrameSchema>;

export const answerFrameSchema = z.object({
  type: z.literal('answer'),
  questionId: id,
  runId: id.optional(),
  selected: z.array(z.string()).max(1024).optional(),
  freeText: z.string().optional(),
  decline: z.boolean().optional(),
});
export type AnswerFrame = z.infer<typeof answerFrameSchema>;

export const cancelFrameSchema = z.object({ type: z.literal('cancel'), runId: id });
export type CancelFrame = z.infer<typeof cancelFrameSchema>;

export const shutdownFrameSchema = z.object({
  type: z.literal('shutdown'),
  reason: z.string().max(4096).optional(),
});
export type ShutdownFrame = z.infer<typeof shutdownFrameSchema>;

// ---- both directions -----------------------------------------------------------------------

export const pingFrameSchema = z.object({ type: z.literal('ping'), id: pingId.optional() });
export type PingFrame = z.infer<typeof pingFrameSchema>;

export const pongFrameSchema = z.object({ type: z.literal('pong'), id: pingId.optional() });
export type PongFrame = z.infer<typeof pongFrameSchema>;

export const fatalFrameSchema = z.object({
  type: z.literal('fatal'),
  code: z.string(),
  message: z.string(),
});
export type FatalFrame = z.infer<typeof fatalFrameSchema>;

// ---- host → driver -------------------------------------------------------------------------

export const engineInfoSchema = z.object({ id: z.string(), displayName: z.string() });
export type EngineInfo = z.infer<typeof engineInfoSchema>;

export const welcomeFrameSchema = z.object({
  type: z.literal('welcome'),
  protocol: z.number().int(),
  host: peerInfoSchema,
  engines: z.array(engineInfoSchema),
  capabilities: capabilitiesSchema,
});
export type WelcomeFrame = z.infer<typeof welcomeFrameSchema>;

const runEvent = { runId: id, seq };

export const acceptedFrameSchema = z.object({
  type: z.literal('accepted'),
  ...runEvent,
  engineId: z.string().optional(),
});
export type AcceptedFrame = z.infer<typeof acceptedFrameSchema>;

export const textFrameSchema = z.object({
  type: z.literal('text'),
  ...runEvent,
  delta: z.string(),
});
export type TextFrame = z.infer<typeof textFrameSchema>;

export const thinkingFrameSchema = z.object({
  type: z.literal('thinking'),
  ...runEvent,
  delta: z.string(),
});
export type ThinkingFrame = z.infer<typeof thinkingFrameSchema>;

export const toolStartFrameSchema = z.object({
  type: z.literal('tool_start'),
  ...runEvent,
  toolCallId: z.string(),
  name: z.string(),
  input: z.unknown().optional(),
  truncated: z.boolean().optional(),
});
export type ToolStartFrame = z.infer<typeof toolStartFrameSchema>;

export const toolEndFrameSchema = z.object({
  type: z.literal('tool_end'),
  ...runEvent,
  toolCallId: z.string(),
  name: z.string(),
  output: z.unknown().optional(),
  isError: z.boolean().optional(),
  truncated: z.boolean().optional(),
});
export type ToolEndFrame = z.infer<typeof toolEndFrameSchema>;

export const progressFrameSchema = z.object({
  type: z.literal('progress'),
  ...runEvent,
  message: z.string(),
});
export type ProgressFrame = z.infer<typeof progressFrameSchema>;

export const warningFrameSchema = z.object({
  type: z.literal('warning'),
  ...runEvent,
  code: z.string(),
  message: z.string(),
});
export type WarningFrame = z.infer<typeof warningFrameSchema>;

export const sessionFrameSchema = z.object({
  type: z.literal('session'),
  ...runEvent,
  nativeSessionId: z.string(),
});
export type SessionFrame = z.infer<typeof sessionFrameSchema>;

export const questionFrameSchema = z.object({
  type: z.literal('question'),
  ...runEvent,
  questionId: id,
  prompt: z.string(),
  options: z.array(z.string()).optional(),
});
export type QuestionFrame = z.infer<typeof questionFrameSchema>;

export const questionOutcomeSchema = z.enum(['answered', 'declined', 'timeout', 'cancelled']);
export type QuestionOutcomeKind = z.infer<typeof questionOutcomeSchema>;

export const questionResolvedFrameSchema = z.object({
  type: z.literal('question_resolved'),
  ...runEvent,
  questionId: id,
  outcome: questionOutcomeSchema,
});
export type QuestionResolvedFrame = z.infer<typeof questionResolvedFrameSchema>;

export const stopReasonSchema = z.enum(['end_turn', 'cancelled']);
export type StopReason = z.infer<typeof stopReasonSchema>;

export const resultFrameSchema = z.object({
  type: z.literal('result'),
  ...runEvent,
  stopReason: stopReasonSchema,
  nativeSessionId: z.string().optional(),
});
export type ResultFrame = z.infer<typeof resultFrameSchema>;

export const wireErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  retryable: z.boolean(),
});
export type WireError = z.infer<typeof wireErrorSchema>;

export const failedFrameSchema = z.object({
  type: z.literal('failed'),
  ...runEvent,
  error: wireErrorSchema,
  nativeSessionId: z.string().optional(),
});
export type FailedFrame = z.infer<typeof failedFrameSchema>;

export const logLevelSchema = z.enum(['debug', 'info', 'warn', 'error']);
export type LogLevel = z.infer<typeof logLevelSchema>;

export const logFrameSchema = z.object({
  type: z.literal('log'),
  level: logLevelSchema,
  message: z.string(),
  code: z.string().optional(),
  runId: z.string().optional(),
});
export type LogFrame = z.infer<typeof logFrameSchema>;

export const byeFrameSchema = z.object({ type: z.literal('bye') });
export type ByeFrame = z.infer<typeof byeFrameSchema>;

// ---- unions --------------------------------------------------------------------------------

export const driverFrameSchemas = {
  hello: helloFrameSchema,
  run: runFrameSchema,
  answer: answerFrameSchema,
  cancel: cancelFrameSchema,
  ping: pingFrameSchema,
  pong: pongFrameSchema,
  shutdown: shutdownFrameSchema,
  fatal: fatalFrameSchema,
} as const;

export const hostFrameSchemas = {
  welcome: welcomeFrameSchema,
  accepted: acceptedFrameSchema,
  text: textFrameSchema,
  thinking: thinkingFrameSchema,
  tool_start: toolStartFrameSchema,
  tool_end: toolEndFrameSchema,
  progress: progressFrameSchema,
  warning: warningFrameSchema,
  session: sessionFrameSchema,
  question: questionFrameSchema,
  question_resolved: questionResolvedFrameSchema,
  result: resultFrameSchema,
  failed: failedFrameSchema,
  ping: pingFrameSchema,
  pong: pongFrameSchema,
  log: logFrameSchema,
  bye: byeFrameSchema,
  fatal: fatalFrameSchema,
} as const;

export type DriverFrame = z.infer<(typeof driverFrameSchemas)[keyof typeof driverFrameSchemas]>;
export type HostFrame = z.infer<(typeof hostFrameSchemas)[keyof typeof hostFrameSchemas]>;

/** Frames that belong to a run and carry `runId` and `seq`. */
export type RunEventFrame =
  | AcceptedFrame
  | TextFrame
  | ThinkingFrame
  | ToolStartFrame
  | ToolEndFrame
  | ProgressFrame
  | WarningFrame
  | SessionFrame
  | QuestionFrame
  | QuestionResolvedFrame
  | ResultFrame
  | FailedFrame;

export type TerminalFrame = ResultFrame | FailedFrame;

const RUN_EVENT_TYPES: ReadonlySet<string> = new Set([
  'accepted',
  'text',
  'thinking',
  'tool_start',
  'tool_end',
  'progress',
  'warning',
  'session',
  'question',
  'question_resolved',
  'result',
  'failed',
]);

export function isRunEventFrame(frame: HostFrame): frame is RunEventFrame {
  return RUN_EVENT_TYPES.has(frame.type);
}

export function isTerminalFrame(frame: HostFrame): frame is TerminalFrame {
  return frame.type === 'result' || frame.type === 'failed';
}

type Schemas = Record<string, z.ZodType>;

function parseWith<S extends Schemas>(
  schemas: S,
  value: unknown,
):
  | { kind: 'frame'; frame: z.infer<S[keyof S]> }
  | { kind: 'unknown'; type: string }
  | { kind: 'invalid'; type: string; issues: string } {
  const type = (value as { type?: unknown }).type;
  if (typeof type !== 'string') return { kind: 'invalid', type: '', issues: 'missing "type"' };
  if (!Object.hasOwn(schemas, type)) return { kind: 'unknown', type };
  const schema = schemas[type] as z.ZodType;
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .slice(0, 5)
      .map((i) => `${i.path.join('.') || '(frame)'}: ${i.message}`)
      .join('; ');
    return { kind: 'invalid', type, issues };
  }
  return { kind: 'frame', frame: parsed.data as z.infer<S[keyof S]> };
}

/** Validates a decoded object as a driver→host frame; unknown types are reported, not thrown. */
export function parseDriverFrame(value: unknown) {
  return parseWith(driverFrameSchemas, value);
}

/** Validates a decoded object as a host→driver frame; unknown types are reported, not thrown. */
export function parseHostFrame(value: unknown) {
  return parseWith(hostFrameSchemas, value);
}
