import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import { calculateJwkThumbprint } from 'jose/jwk/thumbprint';
import { PackSignatureError } from './errors.js';
import { kidProblem } from '@packwarden/pack-manifest/resolve';

const generateKeyPairAsync = promisify(generateKeyPair);

export interface GenerateKeypairOptions {
  /** The key's id. Default: its RFC 7638 thumbprint. */
  kid?: string;
}

/** The public half of a pack-signing key as a JWK, ready to publish in a JWKS. */
export interface PackSigningPublicJwk {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
  kid: string;
  alg: 'ES256';
  use: 'sig';
}

export interface GeneratedKeypair {
  kid: string;
  /** PKCS#8 PEM. Keep it secret; store it with mode 0600. */
  privateKeyPem: string;
  /** SPKI PEM: what a `{kid: PEM}` keys file holds. */
  publicKeyPem: string;
  publicJwk: PackSigningPublicJwk;
  /** RFC 7638 SHA-256 thumbprint of the public key, unpadded base64url: the value to pin. */
  thumbprint: string;
}

/** Creates a new ES256 (EC P-256) pack-signing key pair. */
export async function generateKeypair(
  options: GenerateKeypairOptions = {},
): Promise<GeneratedKeypair> {
  if (typeof options !== 'object' || options === null) {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      'generateKeypair: options must be an object.',
    );
  }
  if (options.kid !== undefined) {
    const problem = kidProblem(options.kid);
    if (problem !== undefined) {
      throw new PackSignatureError('ERR_INVALID_KID', `generateKeypair: ${problem}.`);
    }
  }
  const { privateKey, publicKey } = await generateKeyPairAsync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' });
  if (typeof jwk.x !== 'string' || typeof jwk.y !== 'string') {
    throw new PackSignatureError('ERR_INTERNAL', 'generateKeypair: Node.js exported no EC point.');
  }
  const thumbprint = await calculateJwkThumbprint(
    { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y },
    'sha256',
  );
  const kid = options.kid ?? thumbprint;
  return {
    kid,
    privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    publicJwk: { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y, kid, alg: 'ES256', use: 'sig' },
    thumbprint,
  };
}
