/** The base64url alphabet and nothing else (no padding, no `+` or `/`). */
export const BASE64URL_ALPHABET = /^[A-Za-z0-9_-]*$/;

/**
 * Decodes one segment of a compact JWS, refusing every encoding but the canonical one: the
 * base64url alphabet, no padding, and unused trailing bits set to zero. Re-encoding the decoded
 * bytes gives back the segment, so one token has exactly one spelling.
 */
export function decodeCanonicalBase64url(segment: string): Uint8Array | undefined {
  if (!BASE64URL_ALPHABET.test(segment)) return undefined;
  return decodeCanonicalAlphabetChecked(segment);
}

/**
 * `decodeCanonicalBase64url` for a segment already known to hold only the base64url alphabet.
 * Canonical is then decided by the length and the last character, without encoding the bytes
 * again (issue 14: re-encoding a 23 KB payload was a tenth of parsing a `pack.sig`): a length of
 * 1 mod 4 holds no whole byte, and the last character of a length of 2 (3) mod 4 carries 4 (2)
 * bits that encode nothing and must be zero. `test/strict-jws.test.ts` checks this against
 * re-encoding.
 */
export function decodeCanonicalAlphabetChecked(segment: string): Uint8Array | undefined {
  const rest = segment.length % 4;
  if (rest === 1) return undefined;
  if (rest !== 0) {
    const unusedBits = rest === 2 ? 0b1111 : 0b11;
    if ((sextet(segment.charCodeAt(segment.length - 1)) & unusedBits) !== 0) return undefined;
  }
  const bytes = Buffer.from(segment, 'base64url');
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The 6-bit value of a base64url character (`A`–`Z`, `a`–`z`, `0`–`9`, `-`, `_`). */
function sextet(code: number): number {
  if (code >= 0x41 && code <= 0x5a) return code - 0x41;
  if (code >= 0x61 && code <= 0x7a) return code - 0x61 + 26;
  if (code >= 0x30 && code <= 0x39) return code - 0x30 + 52;
  return code === 0x2d ? 62 : 63;
}
