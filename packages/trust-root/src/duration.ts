import { TrustRootError } from './errors.js';

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(\d{1,9})(ms|s|m|h|d)?$/;

/**
 * Parses `72h`, `30m`, `90s`, `1d`, `500ms` or a bare number of seconds into milliseconds.
 * Anything else, or a value above `maxMs`, is refused: a typo must not silently widen a bound.
 */
export function parseDuration(text: string, maxMs: number): number {
  const match = DURATION.exec(text.trim());
  if (match === null) {
    throw new TrustRootError(
      'ERR_DURATION_INVALID',
      `"${text}" is not a duration: use a number of seconds or a number followed by ms, s, m, h or d (for example 72h).`,
    );
  }
  const unit = (match[2] ?? 's') as keyof typeof UNIT_MS;
  const ms = Number(match[1]) * UNIT_MS[unit];
  if (ms > maxMs) {
    throw new TrustRootError(
      'ERR_DURATION_INVALID',
      `"${text}" is longer than the allowed ${formatDuration(maxMs)}.`,
    );
  }
  return ms;
}

/** A short human form (`3d 2h`, `45m`, `12s`) for messages. */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms / 1000));
  const parts: string[] = [];
  const days = Math.floor(total / 86_400);
  const hours = Math.floor((total % 86_400) / 3_600);
  const minutes = Math.floor((total % 3_600) / 60);
  const seconds = total % 60;
  if (days > 0) parts.push(`${days}d`);
  if (hours > 0) parts.push(`${hours}h`);
  if (minutes > 0) parts.push(`${minutes}m`);
  if (seconds > 0 || parts.length === 0) parts.push(`${seconds}s`);
  return parts.slice(0, 2).join(' ');
}
