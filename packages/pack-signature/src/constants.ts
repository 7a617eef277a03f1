/** The signature file at the root of a pack (README "The strict pre-parser"). */
export const PACK_SIGNATURE_FILE = 'pack.sig';

/** A larger `pack.sig` is refused before it is read in full. */
export const PACK_SIGNATURE_MAX_BYTES = 4 * 1024 * 1024;

/** The one JWS algorithm a `pack.sig` may use. */
export const PACK_SIGNATURE_ALG = 'ES256';

/** Above this many manifest entries a signer leaves the `files` claim out. */
export const FILE_LIST_MAX_ENTRIES = 5000;

/** Longest accepted `kid`, in UTF-16 code units (the rule lives in `@packwarden/pack-manifest`). */
export { KID_MAX_LENGTH } from '@packwarden/pack-manifest/resolve';

/**
 * The `iat` a verifier accepts in a signed payload, in seconds since the epoch: from
 * 2000-01-01T00:00:00Z to 2100-01-01T00:00:00Z. Anything outside is a broken signer clock or a
 * crafted token, never a real release.
 */
export const PACK_SIGNATURE_IAT_RANGE = Object.freeze({ min: 946_684_800, max: 4_102_444_800 });

/**
 * How far in the future a signed `iat` may lie, in seconds, for the clocks of signer and verifier
 * to disagree. A later `iat` is `invalid` / `issued-in-future`: a signature dated 2099 would
 * otherwise outlive every `notAfter` and revocation checked at its `iat`.
 */
export const PACK_SIGNATURE_MAX_CLOCK_SKEW_SECONDS = 300;
