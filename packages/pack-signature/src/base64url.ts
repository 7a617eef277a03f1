/**
 * Decodes one segment of a compact JWS, refusing every encoding but the canonical one: the
 * base64url alphabet, no padding, and unused trailing bits set to zero. Re-encoding the decoded
 * bytes must give back the segment, so one token has exactly one spelling.
 */
export function decodeCanonicalBase64url(segment: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(segment) || segment.length % 4 === 1) return undefined;
  const bytes = Buffer.from(segment, 'base64url');
  if (bytes.toString('base64url') !== segment) return undefined;
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
