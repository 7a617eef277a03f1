import { join } from 'node:path';
import { isPackManifestError, packwardenHome } from '@packwarden/pack-manifest/resolve';
import type { EnvLike } from './env.js';
import { TrustRootError } from './errors.js';
import { CACHE_KEY_MIN_BYTES, processCacheKey } from './jwks-cache.js';
import type { FetchLike } from './jwks-fetch.js';
import { TRUST_ROOT_LIMITS } from './limits.js';

export interface LoadPackTrustRootOptions {
  /** Environment to read `PACKWARDEN_*` / `AGENTHIPPO_*` variables from. Default `process.env`. */
  readonly env?: EnvLike;
  /** `--keys FILE`: a JSON file `{kid: PEM}` or a JWKS. Beats every other source. */
  readonly keysFile?: string;
  /** Inline keys from the caller: JSON text, or an already parsed `{kid: PEM}` / JWKS value. */
  readonly keys?: string | object;
  /** `--jwks URL`: beats the environment. */
  readonly jwksUrl?: string | URL;
  /** `--pin`: RFC 7638 thumbprints; beats `PACKWARDEN_PACK_JWKS_PINS` when non-empty. */
  readonly pins?: readonly string[];
  /** The control plane; keys are read from `GET <origin>/api/keys`. Beats `PACKWARDEN_LEASE_URL`. */
  readonly leaseUrl?: string | URL;
  /** Used for every request. Default `globalThis.fetch`. */
  readonly fetch?: FetchLike;
  /** Folder of the last-known-good cache, or `false` for none. Default `$PACKWARDEN_HOME/cache/trust-root`. */
  readonly cacheDir?: string | false;
  /**
   * Secret (at least 32 bytes) that authenticates cache entries (HMAC-SHA256). Default: a random
   * key held only in this process's memory, so only entries this process wrote are believed.
   * Pass your own to share the cache between processes, and keep it where no code you verify can
   * read or write it.
   */
  readonly cacheKey?: Uint8Array;
  /** Clock used for cache freshness and staleness. Default `() => new Date()`. */
  readonly now?: () => Date;
  /** Per-request timeout, body included, 1–5000 ms. Default 5000. */
  readonly timeoutMs?: number;
  /** How long a cached copy may stand in after network errors and 5xx. Default `PACKWARDEN_PACK_JWKS_MAX_STALE` or 72 h. */
  readonly maxStaleMs?: number;
  readonly signal?: AbortSignal;
}

/** Options with every default filled in; the only place defaults live. */
export interface ResolvedOptions {
  readonly env: EnvLike;
  readonly keysFile?: string;
  readonly keys?: string | object;
  readonly jwksUrl?: string | URL;
  readonly pins?: readonly string[];
  readonly leaseUrl?: string | URL;
  readonly fetch: FetchLike;
  readonly cacheDir: string | false;
  readonly cacheKey: Uint8Array;
  /** Why the default cache folder could not be used, when it could not. */
  readonly cacheWarning?: string;
  readonly now: () => Date;
  readonly timeoutMs: number;
  readonly maxStaleMs?: number;
  readonly signal?: AbortSignal;
}

export function resolveOptions(options: LoadPackTrustRootOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) invalid('options must be an object');
  const env = options.env ?? process.env;
  const fetchImpl = options.fetch ?? globalThis.fetch;
  if (typeof fetchImpl !== 'function') invalid('fetch must be a function');
  const now = options.now ?? ((): Date => new Date());
  if (typeof now !== 'function') invalid('now must be a function returning a Date');
  const timeoutMs = options.timeoutMs ?? TRUST_ROOT_LIMITS.timeoutMs;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > TRUST_ROOT_LIMITS.timeoutMs) {
    invalid(`timeoutMs must be between 1 and ${TRUST_ROOT_LIMITS.timeoutMs}`);
  }
  const { maxStaleMs } = options;
  if (
    maxStaleMs !== undefined &&
    (!Number.isFinite(maxStaleMs) || maxStaleMs < 0 || maxStaleMs > TRUST_ROOT_LIMITS.maxMaxStaleMs)
  ) {
    invalid(`maxStaleMs must be between 0 and ${TRUST_ROOT_LIMITS.maxMaxStaleMs}`);
  }
  for (const name of ['keysFile', 'jwksUrl', 'leaseUrl'] as const) {
    const value = options[name];
    if (
      value !== undefined &&
      !(value instanceof URL) &&
      (typeof value !== 'string' || value.trim() === '')
    ) {
      invalid(`${name} must be a non-empty string`);
    }
  }
  if (
    options.keys !== undefined &&
    typeof options.keys !== 'string' &&
    (typeof options.keys !== 'object' || options.keys === null)
  ) {
    invalid('keys must be JSON text or an object');
  }
  if (
    options.pins !== undefined &&
    (!Array.isArray(options.pins) || options.pins.some((pin) => typeof pin !== 'string'))
  ) {
    invalid('pins must be an array of strings');
  }
  if (
    options.cacheDir !== undefined &&
    options.cacheDir !== false &&
    (typeof options.cacheDir !== 'string' || options.cacheDir === '')
  ) {
    invalid('cacheDir must be a folder path or false');
  }
  if (
    options.cacheKey !== undefined &&
    (!(options.cacheKey instanceof Uint8Array) || options.cacheKey.length < CACHE_KEY_MIN_BYTES)
  ) {
    invalid(`cacheKey must be a Uint8Array of at least ${CACHE_KEY_MIN_BYTES} bytes`);
  }
  const fallback = options.cacheDir === undefined ? defaultCacheDir(env) : undefined;
  const cacheDir = options.cacheDir ?? fallback?.dir ?? false;
  return {
    env,
    ...(options.keysFile === undefined ? {} : { keysFile: options.keysFile }),
    ...(options.keys === undefined ? {} : { keys: options.keys }),
    ...(options.jwksUrl === undefined ? {} : { jwksUrl: options.jwksUrl }),
    ...(options.pins === undefined ? {} : { pins: options.pins }),
    ...(options.leaseUrl === undefined ? {} : { leaseUrl: options.leaseUrl }),
    fetch: fetchImpl,
    cacheDir,
    cacheKey: options.cacheKey ?? processCacheKey(),
    ...(fallback?.warning === undefined ? {} : { cacheWarning: fallback.warning }),
    now,
    timeoutMs,
    ...(maxStaleMs === undefined ? {} : { maxStaleMs }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  };
}

/**
 * `$PACKWARDEN_HOME/cache/trust-root`, the home found by pack-manifest's `packwardenHome` (one
 * rule: never an empty or relative `HOME`). Without an absolute home there is no disk cache,
 * with a warning: the cache is an optimisation, never a reason to refuse or to write under the
 * current folder.
 */
export function defaultCacheDir(env: EnvLike): { dir: string | false; warning?: string } {
  try {
    return { dir: join(packwardenHome(env), 'cache', 'trust-root') };
  } catch (error) {
    if (!isPackManifestError(error)) throw error;
    return { dir: false, warning: `no trust root cache on disk: ${error.message}` };
  }
}

function invalid(message: string): never {
  throw new TrustRootError('ERR_INVALID_OPTIONS', `loadPackTrustRoot: ${message}.`);
}
