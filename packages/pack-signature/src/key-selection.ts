import type { KeyObject, webcrypto } from 'node:crypto';

/**
 * What a key selector answers for a token's `kid` at its `iat`. The same shape as
 * `TrustedKeySelection` of `@packwarden/trust-root`, declared here so that this package does not
 * depend on it: `(kid, at) => selectTrustedKey(root, kid, { at })` is a `KeySelector`.
 */
export type KeySelection =
  | {
      readonly kind: 'ok';
      readonly key: {
        readonly kid: string;
        /** An EC P-256 public key. */
        readonly key: KeyObject | webcrypto.CryptoKey;
        /** RFC 7638 thumbprint, reported in the result when given. */
        readonly thumbprint?: string;
      };
    }
  | { readonly kind: 'no-trust-root'; readonly message: string }
  | {
      readonly kind: 'trust-root-unavailable';
      readonly reason: string;
      readonly retryable?: boolean;
      readonly code?: string;
    }
  | {
      readonly kind: 'untrusted-key';
      readonly reason: string;
      readonly kid: string;
      readonly message: string;
    };

/** Picks the key that may verify a signature by `kid` made at `at` (the payload's `iat`). */
export type KeySelector = (kid: string, at: Date) => KeySelection | Promise<KeySelection>;

const KINDS = new Set(['ok', 'no-trust-root', 'trust-root-unavailable', 'untrusted-key']);

/** True when `value` has the shape of a `KeySelection` (what a buggy selector might not return). */
export function isKeySelection(value: unknown): value is KeySelection {
  if (typeof value !== 'object' || value === null) return false;
  const kind = (value as { kind?: unknown }).kind;
  if (typeof kind !== 'string' || !KINDS.has(kind)) return false;
  if (kind === 'ok') {
    const key = (value as { key?: unknown }).key;
    if (typeof key !== 'object' || key === null) return false;
    const { kid, key: material, thumbprint } = key as Record<string, unknown>;
    return (
      typeof kid === 'string' &&
      typeof material === 'object' &&
      material !== null &&
      (thumbprint === undefined || typeof thumbprint === 'string')
    );
  }
  return true;
}
