import { createHash } from 'node:crypto';

/**
 * RFC 7638 SHA-256 thumbprint of an EC public key: the members in lexicographic order.
 * Kept in-house rather than jose's `calculateJwkThumbprint`: four lines, synchronous, and the
 * package then needs no jose at run time (README "Install"); test/thumbprint.test.ts checks it
 * against jose.
 */
export function ecThumbprint(jwk: { crv: string; x: string; y: string }): string {
  const canonical = JSON.stringify({ crv: jwk.crv, kty: 'EC', x: jwk.x, y: jwk.y });
  return createHash('sha256').update(canonical, 'utf8').digest('base64url');
}
