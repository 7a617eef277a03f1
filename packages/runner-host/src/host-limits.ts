import { RunnerHostError } from './errors.js';
import type { WireError } from './frames.js';

/**
 * Every bound the host applies to what an engine emits (README "Caps"), each with its unit.
 * Frozen: they are part of the protocol's documented behaviour, not tunables.
 */
export const HOST_LIMITS = Object.freeze({
  /** Characters of a message, prompt or error text before it is cut. */
  textFieldChars: 1024 * 1024,
  /** Characters of a name, id or option. */
  nameFieldChars: 4096,
  /** Characters of a warning code. */
  codeFieldChars: 128,
  /** Characters of a tool input/output's JSON before it is replaced by a truncated string. */
  toolPayloadChars: 1024 * 1024,
  /** Characters of one text/thinking frame's delta. */
  deltaPieceChars: 32 * 1024,
  /** Options of one question. */
  questionOptions: 256,
  /** Run ids remembered per connection to refuse a reused one. */
  rememberedRunIds: 1024,
});

const WIRE_CODE = /^[a-z][a-z0-9_]{0,63}$/;
const MAX_TOOL_PAYLOAD = HOST_LIMITS.toolPayloadChars;
const MAX_DELTA_PIECE = HOST_LIMITS.deltaPieceChars;
const MAX_TEXT_FIELD = HOST_LIMITS.textFieldChars;

export function capString(value: string, max: number): string {
  if (value.length <= max) return value;
  let end = max;
  const code = value.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${value.slice(0, end)}…[truncated]`;
}

export function capPayload(value: unknown): { value?: unknown; truncated: boolean } {
  if (value === undefined) return { truncated: false };
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    return { value: capString(String(value), MAX_TOOL_PAYLOAD), truncated: true };
  }
  if (json === undefined) return { truncated: false };
  if (json.length <= MAX_TOOL_PAYLOAD)
    return { value: JSON.parse(json) as unknown, truncated: false };
  return { value: capString(json, MAX_TOOL_PAYLOAD), truncated: true };
}

/** `delta` in pieces of at most `maxPiece` (default `HOST_LIMITS.deltaPieceChars`, at least 2) characters, never between a surrogate pair. */
export function splitDelta(delta: string, maxPiece: number = MAX_DELTA_PIECE): string[] {
  if (delta.length <= maxPiece) return [delta];
  const pieces: string[] = [];
  let start = 0;
  while (start < delta.length) {
    let end = Math.min(start + maxPiece, delta.length);
    const code = delta.charCodeAt(end - 1);
    if (end < delta.length && code >= 0xd800 && code <= 0xdbff) end -= 1;
    pieces.push(delta.slice(start, end));
    start = end;
  }
  return pieces;
}

export function toWireError(error: unknown): WireError {
  const candidate = error as { code?: unknown; retryable?: unknown; message?: unknown } | null;
  const code =
    candidate !== null &&
    typeof candidate === 'object' &&
    typeof candidate.code === 'string' &&
    WIRE_CODE.test(candidate.code)
      ? candidate.code
      : 'engine_error';
  const message =
    candidate !== null && typeof candidate === 'object' && typeof candidate.message === 'string'
      ? candidate.message
      : String(error);
  return {
    code,
    message: capString(message || 'engine failed', MAX_TEXT_FIELD),
    retryable: candidate !== null && typeof candidate === 'object' && candidate.retryable === true,
  };
}

export function nonNegative(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 0) {
    throw new RunnerHostError('ERR_INVALID_OPTIONS', `${name} must be a non-negative number`);
  }
  return value;
}

/**
 * The longest delay a Node timer takes: a longer one (or a fraction below 1) is not refused but
 * replaced by 1 ms, which would turn "wait a very long time" into "fire at once".
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** An optional deadline in ms: `undefined` (none) or a number from 1 to {@link MAX_TIMER_MS}. */
export function timerDelay(value: number | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isFinite(value) || value < 1 || value > MAX_TIMER_MS) {
    throw new RunnerHostError(
      'ERR_INVALID_OPTIONS',
      `${name} must be a number of milliseconds from 1 to ${MAX_TIMER_MS}`,
    );
  }
  return value;
}
