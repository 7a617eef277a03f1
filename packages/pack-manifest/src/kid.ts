// The one rule for key ids (`kid`), used by pack-signature (signing, the `pack.sig` header) and
// trust-root (keys files, JWKS, control plane), so a key the trust root accepts is a key a
// signature can name, and a kid that `trust show` or a refusal prints reads as what it is.

/** Longest accepted `kid`, in UTF-16 code units. */
export const KID_MAX_LENGTH = 256;

// Control and format characters (bidi overrides, zero-width), separators, lone surrogates and
// any whitespace: a kid is printed in refusals and may become a file name, so it must show
// exactly what it is.
const FORBIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Z}\s]/u;

/** Why `kid` cannot name a pack-signing key, or undefined when it can. */
export function kidProblem(kid: unknown): string | undefined {
  if (typeof kid !== 'string') return 'kid must be a string';
  if (kid.length === 0) return 'kid is empty';
  if (kid.length > KID_MAX_LENGTH) return `kid is longer than ${KID_MAX_LENGTH} characters`;
  if (kid.includes('/') || kid.includes('\\')) return 'kid contains a path separator';
  if (kid.includes('..')) return 'kid contains ".."';
  if (FORBIDDEN.test(kid)) return 'kid contains a control, format or whitespace character';
  return undefined;
}
