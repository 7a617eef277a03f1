import { TrustRootError } from './errors.js';
import { TRUST_ROOT_LIMITS } from './limits.js';
import { decodeUtf8 } from './utf8.js';

export type FetchLike = typeof globalThis.fetch;

export interface KeySetRequest {
  readonly url: URL;
  readonly fetch: FetchLike;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Sent as `If-None-Match` to revalidate a cached copy. */
  readonly etag?: string;
  readonly what: string;
}

export type KeySetResponse =
  | {
      readonly status: 200;
      readonly body: string;
      readonly etag?: string;
      readonly cacheControl: string | null;
    }
  | { readonly status: 304; readonly etag?: string; readonly cacheControl: string | null };

/**
 * One bounded GET: a timeout covering headers and body, no redirects followed, the body size
 * enforced while streaming. Failures are `TrustRootError`s; network errors, timeouts, 5xx, 408 and 429 are
 * `retryable` (the only ones a cached copy may stand in for).
 */
export async function fetchKeySet(request: KeySetRequest): Promise<KeySetResponse> {
  const { url, signal, what } = request;
  if (signal?.aborted === true) throw aborted(signal);
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, request.timeoutMs);
  const forwardAbort = (): void => controller.abort();
  signal?.addEventListener('abort', forwardAbort, { once: true });

  const classify = (cause: unknown): TrustRootError => {
    if (cause instanceof TrustRootError) return cause;
    if (signal?.aborted === true) return aborted(signal);
    if (timedOut) {
      return new TrustRootError(
        'ERR_FETCH_TIMEOUT',
        `${what} did not answer within ${request.timeoutMs} ms.`,
        { cause, retryable: true },
      );
    }
    return new TrustRootError(
      'ERR_FETCH_FAILED',
      `${what} could not be reached: ${describeNetworkError(cause)}.`,
      { cause, retryable: true },
    );
  };

  try {
    const headers: Record<string, string> = {
      accept: 'application/jwk-set+json, application/json',
    };
    if (request.etag !== undefined) headers['if-none-match'] = request.etag;
    let response: Response;
    try {
      response = await request.fetch(url.href, {
        method: 'GET',
        headers,
        redirect: 'manual',
        credentials: 'omit',
        signal: controller.signal,
      });
    } catch (cause) {
      throw classify(cause);
    }
    try {
      return await readResponse(response, request);
    } catch (cause) {
      await response.body?.cancel().catch(() => undefined);
      throw classify(cause);
    }
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', forwardAbort);
  }
}

async function readResponse(response: Response, request: KeySetRequest): Promise<KeySetResponse> {
  const { what } = request;
  const etag = readEtag(response.headers.get('etag'));
  const cacheControl = response.headers.get('cache-control');
  // A redirect could move trust to whoever controls the target: refuse it, whatever the fetch.
  if (
    response.type === 'opaqueredirect' ||
    response.redirected ||
    (response.status >= 300 && response.status < 400 && response.status !== 304)
  ) {
    const location = response.headers.get('location');
    throw new TrustRootError(
      'ERR_REDIRECT_REFUSED',
      `${what} answered with a redirect (HTTP ${response.status}${location === null ? '' : ` to ${location.slice(0, 200)}`}); redirects are never followed, configure the final URL.`,
    );
  }
  if (response.status === 304) {
    if (request.etag === undefined) {
      throw new TrustRootError(
        'ERR_HTTP_STATUS',
        `${what} answered 304 Not Modified to an unconditional request.`,
      );
    }
    await response.body?.cancel().catch(() => undefined);
    return { status: 304, ...(etag === undefined ? {} : { etag }), cacheControl };
  }
  if (response.status !== 200) {
    throw new TrustRootError('ERR_HTTP_STATUS', `${what} answered HTTP ${response.status}.`, {
      // 408 and 429 say "not now" (a timeout, rate limiting), like a 5xx: the source has not
      // withdrawn anything, so a last-known-good copy may stand in and is not retired.
      retryable:
        (response.status >= 500 && response.status <= 599) ||
        response.status === 408 ||
        response.status === 429,
    });
  }
  const max = TRUST_ROOT_LIMITS.maxDocumentBytes;
  const declared = response.headers.get('content-length');
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > max) {
    throw tooLarge(what, max);
  }
  const body = await readBounded(response, max, what);
  return {
    status: 200,
    body: decodeUtf8(body, what),
    ...(etag === undefined ? {} : { etag }),
    cacheControl,
  };
}

async function readBounded(response: Response, max: number, what: string): Promise<Uint8Array> {
  if (response.body === null) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(what, max);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, total);
}

function readEtag(value: string | null): string | undefined {
  if (value === null || value.length === 0 || value.length > TRUST_ROOT_LIMITS.maxEtagLength)
    return undefined;
  // Only visible ASCII survives into a later If-None-Match header.
  return /^[\x21-\x7e]+(?: [\x21-\x7e]+)*$/.test(value) ? value : undefined;
}

function tooLarge(what: string, max: number): TrustRootError {
  return new TrustRootError(
    'ERR_RESPONSE_TOO_LARGE',
    `${what} sent more than ${max} bytes; the response is refused.`,
  );
}

function aborted(signal: AbortSignal): TrustRootError {
  return new TrustRootError('ERR_ABORTED', 'loading the trust root was aborted.', {
    cause: signal.reason,
  });
}

function describeNetworkError(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = current.cause;
  }
  return error instanceof Error ? error.message : String(error);
}
