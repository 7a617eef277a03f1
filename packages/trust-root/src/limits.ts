/** Every bound the trust root enforces, in one place (README, "Remote sources" and "The cache"). */
export const TRUST_ROOT_LIMITS = Object.freeze({
  /** Largest keys file, inline key document, JWKS or `/api/keys` body, in bytes. */
  maxDocumentBytes: 256 * 1024,
  /** Deepest nesting of arrays and objects in a key document or cache file. */
  maxDocumentDepth: 8,
  /** Most keys one document may list; a larger document is refused as a whole. */
  maxKeys: 100,
  /** Most pins accepted. */
  maxPins: 100,
  /** Longest accepted `kid` (the kid rule is pack-manifest's `kidProblem`). */
  maxKidLength: 256,
  /** Longest accepted PEM text for one key. */
  maxPemLength: 4096,
  /** Longest accepted URL. */
  maxUrlLength: 2048,
  /** Network timeout for one request, body included; also the largest `timeoutMs` accepted. */
  timeoutMs: 5_000,
  /** `Cache-Control: max-age` is clamped into [minFreshMs, maxFreshMs]. */
  minFreshMs: 60_000,
  maxFreshMs: 24 * 60 * 60_000,
  /** Freshness when the server sends no `max-age`. */
  defaultFreshMs: 5 * 60_000,
  /** Default bound on serving a cached key set after a network error or 5xx. */
  defaultMaxStaleMs: 72 * 60 * 60_000,
  /** Largest accepted `maxStaleMs` / `PACKWARDEN_PACK_JWKS_MAX_STALE`. */
  maxMaxStaleMs: 30 * 24 * 60 * 60_000,
  /** Largest cache file read back from disk. */
  maxCacheFileBytes: 2 * 1024 * 1024,
  /** Longest ETag remembered for revalidation. */
  maxEtagLength: 1024,
});
