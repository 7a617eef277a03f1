import type { TrustRootErrorCode } from './errors.js';
import type { PackTrustRoot } from './types.js';

/**
 * The codes of an `unavailable` trust root that its own configuration caused: a bad option, URL,
 * pin or duration, or a key document that cannot be read or parsed (README "Error codes"). Trying
 * again cannot help; the operator must fix flags or variables. Every other unavailable code is an
 * outage of a configured source (network, HTTP status, no usable or pinned key in what the server
 * sent), which a caller may retry.
 */
export const TRUST_ROOT_CONFIG_CODES: ReadonlySet<TrustRootErrorCode> = new Set<TrustRootErrorCode>(
  [
    'ERR_INVALID_OPTIONS',
    'ERR_URL_INVALID',
    'ERR_URL_INSECURE',
    'ERR_PIN_INVALID',
    'ERR_DURATION_INVALID',
    'ERR_KEYS_FILE_READ',
    'ERR_KEYS_TOO_LARGE',
    'ERR_KEYS_PARSE',
    'ERR_KEYS_DUPLICATE_MEMBER',
    'ERR_TOO_MANY_KEYS',
    'ERR_KEY_INVALID',
  ],
);

/** How a loaded trust root stands: `ok`, `none` (nothing configured), `config` or `outage`. */
export type TrustRootProblem = 'ok' | 'none' | 'config' | 'outage';

/**
 * Classifies a trust root from `loadPackTrustRoot`: an `unavailable` root is `config` when its
 * code is one of `TRUST_ROOT_CONFIG_CODES` (a usage error: fix the configuration), else `outage`
 * (the source failed; retry). `none` and `unavailable` are never collapsed.
 */
export function classifyTrustRoot(root: PackTrustRoot): TrustRootProblem {
  if (root.status !== 'unavailable') return root.status;
  return TRUST_ROOT_CONFIG_CODES.has(root.code) ? 'config' : 'outage';
}
