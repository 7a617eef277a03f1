// The one rule for key ids (`kid`), used by pack-signature (signing, the `pack.sig` header) and
// trust-root (keys files, JWKS, control plane), so a key the trust root accepts is a key a
// signature can name, and a kid that `trust show` or a refusal prints reads as what it is.

/** Longest accepted `kid`, in UTF-16 code units. */
export const KID_MAX_LENGTH = 256;

// Printable ASCII but the space: none of it is a character `hasForbidden` looks for.
const PRINTABLE_ASCII = /^[\x21-\x7e]*$/;

// Control and format characters (bidi overrides, zero-width), separators, lone surrogates and
// any whitespace: a kid is printed in refusals and may become a file name, so it must show
// exactly what it is. The pattern is made only for a kid that is not printable ASCII: V8 builds
// the Unicode sets of `\p{…}` classes when it makes a pattern, ~2 M instructions of every CLI
// start-up that loads this module, where the usual kid needs none of them (issue 14).
let forbidden: RegExp | undefined;
const hasForbidden = (kid: string) =>
  !PRINTABLE_ASCII.test(kid) && (forbidden ??= /[\p{Cc}\p{Cf}\p{Cs}\p{Z}\s]/u).test(kid);

/** Why `kid` cannot name a pack-signing key, or undefined when it can. */
export function kidProblem(kid: unknown): string | undefined {
  if (typeof kid !== 'string') return 'kid must be a string';
  if (kid.length === 0) return 'kid is empty';
  if (kid.length > KID_MAX_LENGTH) return `kid is longer than ${KID_MAX_LENGTH} characters`;
  if (kid.includes('/') || kid.includes('\\')) return 'kid contains a path separator';
  if (kid.includes('..')) return 'kid contains ".."';
  if (hasForbidden(kid)) return 'kid contains a control, format or whitespace character';
  return undefined;
}
