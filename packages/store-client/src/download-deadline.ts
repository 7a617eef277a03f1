import { StoreError } from './errors.js';

/**
 * The idle timeout alone lets a store that drips one byte just inside it hold a download (and the
 * per-pack install lock) for years. A deadline bounds the whole download. The default lets the
 * largest archive allowed (`maxDownloadBytes` / `maxLayerBytes`, 1 GiB) arrive at about 150 KiB/s
 * (1.2 Mbit/s), a slow link, while a dripping store is cut off within two hours.
 */
export const DEFAULT_DOWNLOAD_TIMEOUT_MS = 2 * 60 * 60_000;

/** Node's timers hold at most this (about 24.8 days); a longer delay would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The total time one download may take, counted from its first request (`downloadTimeoutMs`). */
export interface DownloadDeadline {
  readonly timeoutMs: number;
  /** `performance.now()` when the download's first request was sent: immune to clock changes. */
  readonly startedAt: number;
}

/** `downloadTimeoutMs` checked and defaulted: a positive number of ms a timer can hold. */
export function resolveDownloadTimeout(value: number | undefined): number {
  if (value === undefined) return DEFAULT_DOWNLOAD_TIMEOUT_MS;
  if (typeof value !== 'number' || !(value > 0) || value > MAX_TIMER_MS) {
    throw new StoreError(
      'ERR_INVALID_ARGUMENT',
      `downloadTimeoutMs must be a positive number of ms, at most ${MAX_TIMER_MS}`,
    );
  }
  return value;
}

export function startDownloadDeadline(timeoutMs: number): DownloadDeadline {
  return { timeoutMs, startedAt: performance.now() };
}

/** Ms left before the deadline; zero or less once it has passed. */
export function remainingMs(deadline: DownloadDeadline): number {
  return deadline.timeoutMs - (performance.now() - deadline.startedAt);
}

export function deadlineError(deadline: DownloadDeadline, url: URL): StoreError {
  return new StoreError(
    'ERR_STORE_TIMEOUT',
    `the download from ${url.origin} did not finish within ${deadline.timeoutMs} ms (downloadTimeoutMs)`,
    // Not the query: a redirect to object storage carries its signature there.
    { subject: url.origin + url.pathname },
  );
}
