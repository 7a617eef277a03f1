import { Readable, Transform, type TransformCallback } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { deadlineError, remainingMs, type DownloadDeadline } from './download-deadline.js';
import { abortError, isStoreError, StoreError } from './errors.js';
import { assertFetchable, assertNoDowngrade } from './url-policy.js';

export type FetchLike = typeof fetch;

export interface RequestOptions {
  fetch: FetchLike;
  headers?: Record<string, string>;
  /** Sent as `Authorization: Bearer …` only to this origin, never after a redirect elsewhere. */
  token?: { value: string; origin: string };
  /** `same-origin`: a redirect to another origin is refused. `any`: followed (https only). */
  redirects: 'same-origin' | 'any';
  maxRedirects?: number;
  /** Time to the response headers, in ms. */
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface FetchedResponse {
  response: Response;
  url: URL;
  /** Call when done with the body (clears timers). */
  controller: AbortController;
}

function combine(signal: AbortSignal | undefined, controller: AbortController): void {
  if (!signal) return;
  if (signal.aborted) controller.abort(signal.reason);
  else signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
}

/**
 * GET with redirects followed by hand: each hop is checked against the URL policy, counted, and
 * the token is attached only while the request goes to its own origin.
 */
export async function request(url: URL, options: RequestOptions): Promise<FetchedResponse> {
  const controller = new AbortController();
  combine(options.signal, controller);
  const maxRedirects = options.maxRedirects ?? 5;
  const start = url;
  let current = url;
  for (let hop = 0; ; hop++) {
    const headers: Record<string, string> = {
      'user-agent': 'packwarden-store-client',
      ...options.headers,
    };
    if (options.token && current.origin === options.token.origin) {
      headers.authorization = `Bearer ${options.token.value}`;
    }
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error('timeout'));
    }, options.timeoutMs);
    let response: Response;
    try {
      response = await options.fetch(current, {
        headers,
        redirect: 'manual',
        signal: controller.signal,
      });
    } catch (cause) {
      if (timedOut) {
        throw new StoreError(
          'ERR_STORE_TIMEOUT',
          `${current.origin} did not answer within ${options.timeoutMs} ms`,
          {
            cause,
            subject: current.href,
          },
        );
      }
      if (options.signal?.aborted) throw abortError(options.signal);
      throw new StoreError(
        'ERR_STORE_FETCH',
        `cannot reach ${current.origin}: ${String((cause as Error)?.cause ?? cause)}`,
        {
          cause,
          subject: current.href,
        },
      );
    } finally {
      clearTimeout(timer);
    }
    if (response.status >= 300 && response.status < 400 && response.status !== 304) {
      await response.body?.cancel().catch(() => undefined);
      const location = response.headers.get('location');
      if (!location) {
        throw new StoreError(
          'ERR_STORE_REDIRECT',
          `${current.href} answered ${response.status} without a Location`,
          {
            subject: current.href,
          },
        );
      }
      if (hop + 1 > maxRedirects) {
        throw new StoreError(
          'ERR_STORE_REDIRECT',
          `more than ${maxRedirects} redirects from ${start.href}`,
          {
            subject: start.href,
          },
        );
      }
      const next = new URL(location, current);
      assertFetchable(next, 'redirect', { allowFile: false });
      assertNoDowngrade(current, next, 'the redirect to');
      if (options.redirects === 'same-origin' && next.origin !== start.origin) {
        throw new StoreError(
          'ERR_STORE_REDIRECT',
          `${current.href} redirects to another origin (${next.origin}); static stores may only redirect within their origin`,
          { subject: next.href },
        );
      }
      current = next;
      continue;
    }
    return { response, url: current, controller };
  }
}

/** Reads a whole body, refusing it as soon as it passes `maxBytes`. */
export async function readBounded(
  response: Response,
  maxBytes: number,
  tooLarge: () => StoreError,
): Promise<Buffer> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge();
  }
  if (!response.body) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let total = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
  }
  return Buffer.concat(chunks, total);
}

/**
 * A response body as a Node stream that fails when no byte arrives for `idleTimeoutMs`, the
 * body passes `maxBytes`, or the download is not over by its `deadline` (`ERR_STORE_TIMEOUT`
 * either way: a store dripping one byte just inside the idle timeout is still cut off).
 */
export function bodyStream(
  fetched: FetchedResponse,
  options: {
    maxBytes: number;
    idleTimeoutMs: number;
    deadline: DownloadDeadline;
    tooLarge: () => StoreError;
    signal?: AbortSignal;
  },
): Readable {
  const { response, controller } = fetched;
  if (!response.body) return Readable.from([]);
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > options.maxBytes) {
    controller.abort();
    throw options.tooLarge();
  }
  // The headers took the whole allowance (each hop is bounded by `timeoutMs` alone).
  const left = remainingMs(options.deadline);
  if (left <= 0) {
    controller.abort();
    throw deadlineError(options.deadline, fetched.url);
  }
  const source = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
  let total = 0;
  let timer: NodeJS.Timeout | undefined;
  const stopTimers = (): void => {
    if (timer) clearTimeout(timer);
    clearTimeout(deadlineTimer);
  };
  const limiter = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      arm();
      total += chunk.length;
      if (total > options.maxBytes) return callback(options.tooLarge());
      callback(null, chunk);
    },
    flush(callback: TransformCallback) {
      stopTimers();
      callback();
    },
  });
  const arm = (): void => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      const error = new StoreError(
        'ERR_STORE_TIMEOUT',
        `${fetched.url.origin} sent nothing for ${options.idleTimeoutMs} ms`,
        { subject: fetched.url.href },
      );
      limiter.destroy(error);
      controller.abort();
    }, options.idleTimeoutMs);
    timer.unref?.();
  };
  arm();
  const deadlineTimer = setTimeout(() => {
    limiter.destroy(deadlineError(options.deadline, fetched.url));
    controller.abort();
  }, left);
  deadlineTimer.unref?.();
  source.on('error', (error) => {
    stopTimers();
    limiter.destroy(
      isStoreError(error)
        ? error
        : options.signal?.aborted
          ? abortError(options.signal)
          : new StoreError(
              'ERR_STORE_FETCH',
              `download from ${fetched.url.origin} failed: ${String(error)}`,
              {
                cause: error,
              },
            ),
    );
  });
  limiter.on('close', () => {
    stopTimers();
    // Closed before the body ended (refused, aborted, or the reader stopped): drop the
    // connection rather than leave it open and paused.
    if (!source.readableEnded) {
      source.destroy();
      controller.abort();
    }
  });
  return source.pipe(limiter);
}

export function statusError(url: URL, status: number, what: string): StoreError {
  const hint =
    status === 404
      ? ' (not found)'
      : status === 401 || status === 403
        ? ' (access denied: for a private or rate-limited GitHub store set GITHUB_TOKEN)'
        : '';
  return new StoreError(
    'ERR_STORE_HTTP_STATUS',
    `${what} ${url.href} answered HTTP ${status}${hint}`,
    {
      subject: url.href,
    },
  );
}
