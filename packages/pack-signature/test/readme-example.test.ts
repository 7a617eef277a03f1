// The "Gate what a service runs" example of README.md, with the environment injected.
import { afterAll, expect, it } from 'vitest';
import { loadPackTrustRoot, selectTrustedKey } from '@packwarden/trust-root';
import { describePackRefusal, signPack, verifyPack } from '../src/index.js';
import { cleanupTemps, makePack, makeSigner } from './helpers.js';

afterAll(cleanupTemps);

async function admitPack(packDir: string, env: Record<string, string>): Promise<string> {
  const root = await loadPackTrustRoot({ env, cacheDir: false });
  const result = await verifyPack(packDir, {
    selectKey: (kid, at) => selectTrustedKey(root, kid, { at }),
  });
  if (result.kind !== 'verified') {
    const { title, detail, fix } = describePackRefusal(result);
    throw new Error(`${title}: ${detail}\n${fix}`);
  }
  return `running ${result.pack}@${result.packVersion}, signed by ${result.kid}`;
}

it('admits a signed pack and refuses unsigned, tampered and untrusted ones', async () => {
  const signer = await makeSigner('acme-release');
  const env = {
    PACKWARDEN_PACK_SIGNING_KEYS: JSON.stringify({ [signer.kid]: signer.publicKeyPem }),
  };
  const pack = await makePack();
  await expect(admitPack(pack, env)).rejects.toThrow(/not signed/);
  await signPack(pack, { privateKeyPem: signer.privateKeyPem, kid: signer.kid });
  expect(await admitPack(pack, env)).toBe('running demo@1.2.3, signed by acme-release');
  await expect(admitPack(pack, {})).rejects.toThrow(/No trust root/);
  const { writeFileSync } = await import('node:fs');
  writeFileSync(`${pack}/AGENTS.md`, 'changed');
  await expect(admitPack(pack, env)).rejects.toThrow(
    /changed after it was signed[\s\S]*AGENTS\.md/,
  );
});
