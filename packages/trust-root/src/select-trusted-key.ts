import { describeMissingTrustRoot } from './describe-trust-root.js';
import type { TrustRootErrorCode } from './errors.js';
import { TrustRootError } from './errors.js';
import type { PackTrustRoot, TrustedKey } from './types.js';

export type UntrustedKeyReason =
  'unknown-kid' | 'ambiguous-kid' | 'not-pinned' | 'revoked' | 'not-yet-valid' | 'expired';

export type TrustedKeySelection =
  | { readonly kind: 'ok'; readonly key: TrustedKey }
  | { readonly kind: 'no-trust-root'; readonly message: string }
  | {
      readonly kind: 'trust-root-unavailable';
      readonly reason: string;
      readonly code: TrustRootErrorCode;
      readonly retryable: boolean;
    }
  | {
      readonly kind: 'untrusted-key';
      readonly reason: UntrustedKeyReason;
      readonly kid: string;
      readonly message: string;
    };

export interface SelectTrustedKeyOptions {
  /** The signature's `iat`: validity windows are checked at this instant. */
  readonly at: Date;
}

/**
 * Picks the key that may verify a signature with header `kid` and payload `iat` (`at`).
 * Anything short of one trusted, unrevoked key valid at `at` is a refusal, with its reason.
 */
export function selectTrustedKey(
  root: PackTrustRoot,
  kid: string,
  options: SelectTrustedKeyOptions,
): TrustedKeySelection {
  const at = options?.at;
  if (!(at instanceof Date) || Number.isNaN(at.getTime())) {
    throw new TrustRootError(
      'ERR_INVALID_ARGUMENT',
      'selectTrustedKey: options.at must be a valid Date (the signature iat).',
    );
  }
  if (root.status === 'none')
    return { kind: 'no-trust-root', message: root.reason || describeMissingTrustRoot() };
  if (root.status === 'unavailable') {
    return {
      kind: 'trust-root-unavailable',
      reason: root.reason,
      code: root.code,
      retryable: root.retryable,
    };
  }
  if (root.status !== 'ok' || root.keys.length === 0) {
    // An empty ring never passes, whatever produced it.
    return {
      kind: 'trust-root-unavailable',
      reason: 'the trust root holds no keys.',
      code: 'ERR_NO_USABLE_KEYS',
      retryable: false,
    };
  }
  const untrusted = (reason: UntrustedKeyReason, message: string): TrustedKeySelection => ({
    kind: 'untrusted-key',
    reason,
    kid,
    message,
  });
  if (typeof kid !== 'string' || kid === '')
    return untrusted('unknown-kid', 'the signature names no kid.');

  const matches = root.keys.filter((key) => key.kid === kid);
  const rejected = root.rejectedKeys.filter((key) => key.kid === kid);
  if (matches.length > 1 || rejected.some((key) => key.reason === 'ambiguous-kid')) {
    return untrusted(
      'ambiguous-kid',
      `kid "${kid}" is listed more than once by the trust root; it is refused as ambiguous.`,
    );
  }
  const key = matches[0];
  if (key === undefined) {
    if (rejected.some((entry) => entry.reason === 'not-pinned')) {
      return untrusted('not-pinned', `key "${kid}" is published but its thumbprint is not pinned.`);
    }
    const dropped = rejected[0];
    return untrusted(
      'unknown-kid',
      dropped === undefined
        ? `no trusted key has kid "${kid}".`
        : `no trusted key has kid "${kid}": ${dropped.message}.`,
    );
  }
  if (key.revoked) return untrusted('revoked', `key "${kid}" is revoked.`);
  if (key.notBefore !== undefined && at.getTime() < key.notBefore.getTime()) {
    return untrusted(
      'not-yet-valid',
      `key "${kid}" is valid from ${key.notBefore.toISOString()}, after the signature's iat ${at.toISOString()}.`,
    );
  }
  if (key.notAfter !== undefined && at.getTime() > key.notAfter.getTime()) {
    return untrusted(
      'expired',
      `key "${kid}" was valid until ${key.notAfter.toISOString()}, before the signature's iat ${at.toISOString()}.`,
    );
  }
  return { kind: 'ok', key };
}
