import type { PackVerificationKind } from './results.js';

/** CLI exit code per kind (2 is the CLI's usage / configuration error). */
export const PACK_VERIFICATION_EXIT_CODES: Readonly<Record<PackVerificationKind, number>> =
  Object.freeze({
    verified: 0,
    invalid: 1,
    unsigned: 3,
    'untrusted-key': 4,
    'no-trust-root': 5,
    'trust-root-unavailable': 6,
    'digest-unsupported': 7,
  });
