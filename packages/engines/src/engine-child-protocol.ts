import * as z from 'zod';

/**
 * What the engine child may send its parent, one JSON object per line on fd 3. The child runs
 * pack code, so it is the untrusted side: every line is bounded, parsed and validated here, and
 * anything else ends the child (README, "Out of process").
 */
export const ENGINE_CHILD_LIMITS = Object.freeze({
  /** Bytes of one line from the child. */
  maxLineBytes: 8 * 1024 * 1024,
  /** Characters of one text, thinking, progress or log message. */
  maxTextChars: 4 * 1024 * 1024,
  /** Lines read but not yet handled before the parent stops reading (backpressure). */
  maxQueuedLines: 256,
  /** Bytes of one line of the engine's console output (a longer line is dropped, with a notice). */
  maxOutputLineBytes: 8 * 1024,
  /** Characters of one log message or console line passed on (the rest is cut). */
  maxLogChars: 8 * 1024,
  /** Log messages and console lines passed on per turn (and between turns); the rest are dropped. */
  maxLogLinesPerTurn: 10_000,
});

const text = z.string().max(ENGINE_CHILD_LIMITS.maxTextChars);
/**
 * A name, id, code or option. The host cuts these to the frame protocol's caps (runner-host
 * README, "Caps": names and ids at 4 KiB, warning codes at 128 characters), as it does for an
 * engine in its own process; the child's own 4 KiB bound made a longer one a protocol violation
 * that stopped the child and failed the turn. Bounded here by what one line may hold.
 */
const name = z.string().max(ENGINE_CHILD_LIMITS.maxTextChars);
/**
 * A native session id may be as long as the frame protocol carries one (runner-host README,
 * "Caps": strings are cut at 1 MiB); a 4 KiB bound turned a long one into a protocol
 * violation that killed the child before its `session` frame got through.
 */
const nativeSessionId = z.string().max(1024 * 1024);
/**
 * A turn's id is its run's `runId`, which the frame protocol allows up to 256 characters
 * (runner-host README, "Frames"): a 128 bound failed every turn of a run with a longer id, as a
 * protocol violation of the child that only echoed it.
 */
const id = z.string().min(1).max(256);
const seq = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const level = z.enum(['debug', 'info', 'warn', 'error']);

const emitPayload = z.discriminatedUnion('method', [
  z.object({ method: z.literal('text'), delta: text }),
  z.object({ method: z.literal('thinking'), delta: text }),
  z.object({ method: z.literal('progress'), message: text }),
  z.object({
    method: z.literal('toolStart'),
    toolCallId: name,
    name,
    input: z.unknown().optional(),
  }),
  z.object({
    method: z.literal('toolEnd'),
    toolCallId: name,
    name,
    output: z.unknown().optional(),
    isError: z.boolean().optional(),
  }),
  z.object({
    method: z.literal('question'),
    prompt: text,
    // The host keeps the first 256 options (HOST_LIMITS.questionOptions) and waits at most its
    // own question timeout, as for an engine in its own process: a bound of 64 options, or a
    // timeout of 0 or over a day, stopped the child and failed the turn instead.
    options: z.array(name).max(4096).optional(),
    timeoutMs: z.number().min(0).optional(),
  }),
  z.object({
    method: z.literal('error'),
    message: text,
    code: name.optional(),
    retryable: z.boolean().optional(),
  }),
  z.object({ method: z.literal('done'), nativeSessionId: nativeSessionId.optional() }),
  z.object({ method: z.literal('warning'), code: name, message: text }),
  z.object({ method: z.literal('session'), nativeSessionId }),
]);
export type EmitPayload = z.infer<typeof emitPayload>;

const failure = z.object({
  message: text,
  code: name.optional(),
  retryable: z.boolean().optional(),
});

export const childMessageSchema = z.union([
  z.object({ t: z.literal('loaded') }),
  z.object({
    t: z.literal('load_failed'),
    kind: z.enum(['resolve', 'import', 'export']),
    message: text,
  }),
  z.object({ t: z.literal('constructed') }),
  z.object({ t: z.literal('construct_failed'), message: text }),
  z.object({ t: z.literal('emit'), id, seq }).and(emitPayload),
  z.object({ t: z.literal('log'), id: id.optional(), level: z.string().max(16), message: text }),
  z.object({ t: z.literal('invalidate') }),
  z.object({
    t: z.literal('end'),
    id,
    ok: z.literal(true),
    nativeSessionId: nativeSessionId.optional(),
  }),
  z.object({ t: z.literal('end'), id, ok: z.literal(false), error: failure }),
  z.object({ t: z.literal('maintained') }),
  z.object({ t: z.literal('disposed') }),
]);
export type ChildMessage = z.infer<typeof childMessageSchema>;

/** A log level the child named, or `info` for anything else. */
export function logLevelOf(value: string): z.infer<typeof level> {
  const parsed = level.safeParse(value);
  return parsed.success ? parsed.data : 'info';
}
