import { formatDuration } from './duration.js';
import { TrustRootError } from './errors.js';
import { parseKeyDocument, type KeyDocumentShape } from './key-document.js';
import { buildKeyRing, type KeyRing } from './key-ring.js';
import { fetchKeySet, type KeySetResponse } from './jwks-fetch.js';
import { freshnessMs } from './cache-control.js';
import {
  fetchedAtForNewEntry,
  noteCacheEntryBelieved,
  readCacheEntry,
  retireCacheEntry,
  writeCacheEntry,
  type CacheEntry,
} from './jwks-cache.js';
import { TRUST_ROOT_LIMITS } from './limits.js';
import type { ResolvedOptions } from './options.js';
import type { TrustRootDelivery } from './types.js';

export interface RemoteSpec {
  readonly kind: 'jwks' | 'lease';
  readonly url: URL;
  readonly pins: readonly string[];
  readonly maxStaleMs: number;
}

export interface RemoteKeys {
  readonly ring: KeyRing;
  readonly stale: boolean;
  readonly delivery: TrustRootDelivery;
  readonly fetchedAt: Date;
  readonly validatedAt: Date;
  readonly expiresAt: Date;
}

/** A cache entry dated beyond this skew into the future is not believed. */
const CLOCK_SKEW_MS = 5 * 60_000;

/**
 * Loads a remote key set with the rules of the README, "The cache": a fresh cached copy is used without a
 * request; an expired one is revalidated with its ETag; after a network error or 5xx a copy last
 * confirmed within `maxStaleMs` is served as stale. 4xx, redirects, bad bodies and pin failures
 * are never papered over with the cache, and retire it: the source has spoken, and a later outage
 * must not bring back keys it no longer vouches for. Throws `TrustRootError`; warnings go to
 * `warnings`.
 */
export async function loadRemoteKeys(
  spec: RemoteSpec,
  options: ResolvedOptions,
  warnings: string[],
): Promise<RemoteKeys> {
  const what =
    spec.kind === 'jwks' ? `JWKS ${spec.url.href}` : `control plane keys ${spec.url.href}`;
  const shapes: readonly KeyDocumentShape[] = spec.kind === 'jwks' ? ['jwks'] : ['jwks', 'list'];
  const ringOf = (body: string, label: string): KeyRing =>
    buildKeyRing(parseKeyDocument(body, shapes, label), {
      strict: false,
      pins: spec.pins,
      what: label,
    });
  const now = options.now();
  const cacheDir = options.cacheDir;
  const cacheSource = { kind: spec.kind, url: spec.url.href, pins: spec.pins };

  let cached =
    cacheDir === false
      ? undefined
      : await readCacheEntry(cacheDir, cacheSource, options.cacheKey, warnings);
  if (cached !== undefined && !believable(cached, now)) {
    warnings.push(
      `the cached copy of ${what} is dated in the future or claims too long a lifetime; it is ignored.`,
    );
    cached = undefined;
  }
  if (cached !== undefined && cacheDir !== false)
    noteCacheEntryBelieved(cacheDir, cacheSource, cached.fetchedAt);

  if (cached !== undefined && now.getTime() < cached.expiresAt.getTime()) {
    try {
      const ring = ringOf(cached.body, `the cached copy of ${what}`);
      return {
        ring,
        stale: false,
        delivery: 'cache',
        fetchedAt: cached.fetchedAt,
        validatedAt: cached.validatedAt,
        expiresAt: cached.expiresAt,
      };
    } catch (error) {
      // Pins may have changed since the copy was cached: go to the network.
      warnings.push(`the cached copy of ${what} is not used: ${messageOf(error)}`);
      cached = undefined;
    }
  }

  /**
   * The source answered, and not with a usable key set: the copy from before is retired, so that
   * a later outage never serves keys the source has stopped vouching for (README "The cache").
   */
  const retire = async (error: TrustRootError): Promise<void> => {
    if (cacheDir === false) return;
    if (await retireCacheEntry(cacheDir, cacheSource, options.now(), warnings)) {
      warnings.push(
        `the cached copy of ${what} is discarded and will not be served if the source fails: ${error.message}`,
      );
    }
  };
  const answeredWith = async (build: () => KeyRing): Promise<KeyRing> => {
    try {
      return build();
    } catch (error) {
      if (error instanceof TrustRootError) await retire(error);
      throw error;
    }
  };

  let response: KeySetResponse;
  try {
    response = await fetchKeySet({
      url: spec.url,
      fetch: options.fetch,
      timeoutMs: options.timeoutMs,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(cached?.etag === undefined ? {} : { etag: cached.etag }),
      what,
    });
  } catch (error) {
    if (error instanceof TrustRootError && !error.retryable && error.code !== 'ERR_ABORTED') {
      await retire(error);
    }
    if (!(error instanceof TrustRootError) || !error.retryable || cached === undefined) throw error;
    return serveStale(error, cached, spec, now, what, ringOf, warnings);
  }

  const validatedAt = options.now();
  const expiresAt = new Date(validatedAt.getTime() + freshnessMs(response.cacheControl));
  if (response.status === 304) {
    // Only sent with If-None-Match, so `cached` exists and its body is the current document.
    const entry = cached as CacheEntry;
    const ring = await answeredWith(() => ringOf(entry.body, what));
    const etag = response.etag ?? entry.etag;
    if (cacheDir !== false) {
      await writeCacheEntry(
        cacheDir,
        { ...entry, ...(etag === undefined ? {} : { etag }), validatedAt, expiresAt },
        options.cacheKey,
        warnings,
      );
    }
    return {
      ring,
      stale: false,
      delivery: 'revalidated',
      fetchedAt: entry.fetchedAt,
      validatedAt,
      expiresAt,
    };
  }

  const body = response.body;
  const ring = await answeredWith(() => ringOf(body, what));
  // Later than every copy of this source the process has believed or retired, so it is read back.
  const fetchedAt =
    cacheDir === false ? validatedAt : fetchedAtForNewEntry(cacheDir, cacheSource, validatedAt);
  if (cacheDir !== false) {
    await writeCacheEntry(
      cacheDir,
      {
        kind: spec.kind,
        url: spec.url.href,
        pins: spec.pins,
        body: response.body,
        ...(response.etag === undefined ? {} : { etag: response.etag }),
        fetchedAt,
        validatedAt,
        expiresAt,
      },
      options.cacheKey,
      warnings,
    );
  }
  return {
    ring,
    stale: false,
    delivery: 'network',
    fetchedAt,
    validatedAt,
    expiresAt,
  };
}

function serveStale(
  error: TrustRootError,
  cached: CacheEntry,
  spec: RemoteSpec,
  now: Date,
  what: string,
  ringOf: (body: string, label: string) => KeyRing,
  warnings: string[],
): RemoteKeys {
  const age = Math.max(0, now.getTime() - cached.validatedAt.getTime());
  if (age > spec.maxStaleMs) {
    throw new TrustRootError(
      error.code,
      `${error.message} The cached copy was last confirmed ${formatDuration(age)} ago, beyond the ${formatDuration(spec.maxStaleMs)} staleness bound, so it is not used.`,
      { cause: error, retryable: true },
    );
  }
  let ring: KeyRing;
  try {
    ring = ringOf(cached.body, `the cached copy of ${what}`);
  } catch (cacheError) {
    throw new TrustRootError(
      error.code,
      `${error.message} The cached copy is not usable either: ${messageOf(cacheError)}`,
      {
        cause: error,
        retryable: true,
      },
    );
  }
  warnings.push(
    `serving a stale copy of ${what}, last confirmed ${cached.validatedAt.toISOString()} (${formatDuration(age)} ago, bound ${formatDuration(spec.maxStaleMs)}), because: ${error.message}`,
  );
  return {
    ring,
    stale: true,
    delivery: 'stale-cache',
    fetchedAt: cached.fetchedAt,
    validatedAt: cached.validatedAt,
    expiresAt: cached.expiresAt,
  };
}

function believable(entry: CacheEntry, now: Date): boolean {
  const limit = now.getTime() + CLOCK_SKEW_MS;
  return (
    entry.validatedAt.getTime() <= limit &&
    entry.fetchedAt.getTime() <= limit &&
    entry.expiresAt.getTime() - entry.validatedAt.getTime() <= TRUST_ROOT_LIMITS.maxFreshMs
  );
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
