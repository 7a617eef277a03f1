import { generateKeypair, signPack } from '@packwarden/pack-signature';
import { loadPackTrustRoot } from '@packwarden/trust-root';

/** Signs `packDir` with a new key; returns the trust root that verifies it. */
export async function signWithNewKey(packDir: string) {
  const key = await generateKeypair({ kid: 'sandbox-test' });
  await signPack(packDir, { privateKeyPem: key.privateKeyPem, kid: key.kid });
  return () =>
    loadPackTrustRoot({ keys: { [key.kid]: key.publicKeyPem }, cacheDir: false, env: {} });
}
