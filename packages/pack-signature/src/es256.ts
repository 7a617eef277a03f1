import { KeyObject, verify as cryptoVerify, type webcrypto } from 'node:crypto';
import { compactVerify } from 'jose/jws/compact/verify';
import type { ParsedCompactJws } from './strict-jws.js';

/** An EC P-256 public key, as `KeyObject` (what `@packwarden/trust-root` gives) or `CryptoKey`. */
export type VerificationKeyInput = KeyObject | webcrypto.CryptoKey;

/**
 * Returns the key as a P-256 public `KeyObject`, or a sentence saying why it is not one. A
 * private key is refused too: a verifier handed a private key is misconfigured.
 */
export function toP256PublicKey(
  input: unknown,
): { ok: true; key: KeyObject } | { ok: false; problem: string } {
  let key: KeyObject;
  if (input instanceof KeyObject) key = input;
  else {
    try {
      key = KeyObject.from(input as webcrypto.CryptoKey);
    } catch {
      return { ok: false, problem: 'not a KeyObject or CryptoKey' };
    }
  }
  if (key.type !== 'public') return { ok: false, problem: `a ${key.type} key, not a public key` };
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    return { ok: false, problem: 'not an EC P-256 key' };
  }
  return { ok: true, key };
}

/**
 * ECDSA P-256 / SHA-256 verification of an IEEE P1363 (`r || s`, 64 bytes) signature. Never
 * throws: anything that is not a valid signature is `false`.
 */
export function verifyEs256Signature(
  data: Uint8Array,
  signature: Uint8Array,
  key: KeyObject,
): boolean {
  if (signature.length !== 64) return false;
  try {
    return cryptoVerify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature);
  } catch {
    return false;
  }
}

/**
 * Checks the token's ES256 signature twice, with Node's ECDSA over the exact signing input and
 * with jose (`algorithms: ['ES256']`); both must accept. The two share no JWS parsing, so a
 * parser difference between this package's pre-parser and jose can only refuse, never pass.
 */
export async function checkEs256Jws(jws: ParsedCompactJws, key: KeyObject): Promise<boolean> {
  return checkEs256Direct(jws, key) && (await confirmEs256WithJose(jws, key));
}

/** The first of the two checks: Node's ECDSA over the exact signing input, synchronous. */
export function checkEs256Direct(jws: ParsedCompactJws, key: KeyObject): boolean {
  return verifyEs256Signature(Buffer.from(jws.signingInput, 'ascii'), jws.signature, key);
}

/**
 * The second check: jose's `compactVerify` of the whole token. WebCrypto runs it on the thread
 * pool, so a caller may start it and go on (`checkFolderSignature`). Never rejects.
 */
export async function confirmEs256WithJose(
  jws: ParsedCompactJws,
  key: KeyObject,
): Promise<boolean> {
  try {
    await compactVerify(jws.token, key, { algorithms: ['ES256'] });
    return true;
  } catch {
    return false;
  }
}
