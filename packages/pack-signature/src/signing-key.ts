import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { PackSignatureError } from './errors.js';

/**
 * Reads the private half of an ES256 key from PEM (PKCS#8; SEC 1 `EC PRIVATE KEY` is read too).
 * Refuses public keys, other curves and other key types, each with its own code.
 */
export function importSigningKey(privateKeyPem: unknown): KeyObject {
  if (typeof privateKeyPem !== 'string' || !privateKeyPem.includes('-----BEGIN ')) {
    throw new PackSignatureError(
      'ERR_SIGNING_KEY_INVALID',
      'privateKeyPem must be a PEM string ("-----BEGIN PRIVATE KEY-----").',
    );
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: privateKeyPem, format: 'pem' });
  } catch (cause) {
    if (isPublicKeyPem(privateKeyPem)) {
      throw new PackSignatureError(
        'ERR_SIGNING_KEY_NOT_PRIVATE',
        'the signing key is a public key; signing needs the private key (PKCS#8 PEM) that `generateKeypair` / `pack keygen` wrote.',
        { cause },
      );
    }
    throw new PackSignatureError(
      'ERR_SIGNING_KEY_INVALID',
      `the signing key is not a PEM private key Node.js can read: ${(cause as Error).message}`,
      { cause },
    );
  }
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    const what =
      key.asymmetricKeyType === 'ec'
        ? `an EC key on ${key.asymmetricKeyDetails?.namedCurve ?? 'an unknown curve'}`
        : `a ${key.asymmetricKeyType ?? 'non-asymmetric'} key`;
    throw new PackSignatureError(
      'ERR_SIGNING_KEY_UNSUPPORTED',
      `the signing key is ${what}; pack.sig v1 is ES256 and needs an EC P-256 key.`,
    );
  }
  return key;
}

function isPublicKeyPem(pem: string): boolean {
  try {
    createPublicKey({ key: pem, format: 'pem' });
    return true;
  } catch {
    return false;
  }
}
