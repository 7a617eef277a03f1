import { TrustRootError } from './errors.js';
import type { KeyImport } from './key-import.js';
import type { RejectedKey, TrustedKey } from './types.js';

export interface KeyRing {
  readonly keys: TrustedKey[];
  readonly rejectedKeys: RejectedKey[];
  readonly warnings: string[];
}

export interface KeyRingOptions {
  /** Local sources are the operator's own statement of trust: any bad entry fails the source. */
  readonly strict: boolean;
  /** RFC 7638 thumbprints; when non-empty only pinned keys are trusted. */
  readonly pins: readonly string[];
  /** Names the source in messages. */
  readonly what: string;
}

/**
 * Turns import outcomes into the trusted key ring. A kid listed more than once is ambiguous and
 * refused altogether (whichever copy a verifier picked, the other could be the one meant). An
 * empty ring is an error, never a pass.
 */
export function buildKeyRing(imports: readonly KeyImport[], options: KeyRingOptions): KeyRing {
  const keys: TrustedKey[] = [];
  const rejectedKeys: RejectedKey[] = [];
  const warnings: string[] = [];

  const kidCounts = new Map<string, number>();
  for (const entry of imports) {
    const kid = entry.ok ? entry.key.kid : entry.kid;
    if (kid !== undefined) kidCounts.set(kid, (kidCounts.get(kid) ?? 0) + 1);
  }
  const ambiguous = new Set([...kidCounts].filter(([, count]) => count > 1).map(([kid]) => kid));
  for (const kid of ambiguous) {
    warnings.push(
      `${options.what} lists kid "${kid}" ${kidCounts.get(kid)} times; that kid is refused as ambiguous.`,
    );
  }

  // Revocation belongs to the key, not to one of its names: the same key listed under another kid
  // (an alias kept through a migration) is revoked too, or its holder would sign under that kid.
  // An entry dropped as unusable (a date in another format, a kid the rule refuses) that says
  // `revoked` revokes its key too: the revocation must not be dropped with the entry.
  const revokedThumbprints = new Set(
    imports.flatMap((entry) => {
      if (entry.ok) return entry.key.revoked ? [entry.key.thumbprint] : [];
      return entry.revokes === undefined ? [] : [entry.revokes];
    }),
  );

  const pins = new Set(options.pins);
  const matchedPins = new Set<string>();
  const unpinned: string[] = [];
  for (const entry of imports) {
    if (!entry.ok) {
      if (options.strict) {
        throw new TrustRootError('ERR_KEY_INVALID', `${options.what}: ${entry.message}.`);
      }
      if (entry.kid !== undefined && ambiguous.has(entry.kid)) continue;
      rejectedKeys.push({
        ...(entry.kid === undefined ? {} : { kid: entry.kid }),
        reason: entry.reason,
        message: entry.message,
      });
      warnings.push(`${options.what}: ${entry.message}.`);
      continue;
    }
    let { key } = entry;
    if (!key.revoked && revokedThumbprints.has(key.thumbprint)) {
      key = Object.freeze({ ...key, revoked: true });
      warnings.push(
        `${options.what}: key "${key.kid}" is revoked, because the same key (${key.thumbprint}) is revoked under another kid.`,
      );
    }
    if (ambiguous.has(key.kid)) {
      rejectedKeys.push({
        kid: key.kid,
        thumbprint: key.thumbprint,
        reason: 'ambiguous-kid',
        message: `kid "${key.kid}" is listed more than once`,
      });
      continue;
    }
    if (pins.size > 0 && !pins.has(key.thumbprint)) {
      rejectedKeys.push({
        kid: key.kid,
        thumbprint: key.thumbprint,
        reason: 'not-pinned',
        message: `key "${key.kid}" (${key.thumbprint}) is not pinned`,
      });
      unpinned.push(key.kid);
      continue;
    }
    if (pins.size > 0) matchedPins.add(key.thumbprint);
    keys.push(key);
  }

  if (pins.size > 0) {
    const pinnedAnywhere = imports.some((entry) => entry.ok && pins.has(entry.key.thumbprint));
    if (!pinnedAnywhere) {
      throw new TrustRootError(
        'ERR_PIN_MISMATCH',
        `no key in ${options.what} matches a pin (pins: ${[...pins].join(', ')}); the key set is refused.`,
      );
    }
    if (unpinned.length > 0) {
      warnings.push(
        `${options.what}: ${unpinned.length} key(s) not pinned and not trusted: ${unpinned.map((kid) => `"${kid}"`).join(', ')}.`,
      );
    }
    for (const pin of pins) {
      if (!matchedPins.has(pin))
        warnings.push(`pin ${pin} matches no trusted key in ${options.what}.`);
    }
  }

  if (keys.length === 0) {
    const why =
      rejectedKeys.length === 0
        ? 'it lists no keys'
        : `every key was refused (${rejectedKeys.map((r) => r.reason).join(', ')})`;
    throw new TrustRootError('ERR_NO_USABLE_KEYS', `${options.what} holds no usable key: ${why}.`);
  }
  return { keys, rejectedKeys, warnings };
}
