import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateKeypair, signPack, type KeySelector } from '@packwarden/pack-signature';
import { loadPackTrustRoot, selectTrustedKey } from '@packwarden/trust-root';
import { describe, expect, it } from 'vitest';
import { buildStaticStore, installPack, isStoreError, openStore } from '../src/index.js';
import { tempDir, writePack } from './helpers.js';

const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as { code: string; message: string; verification?: { kind: string } },
  );

async function fixture() {
  const root = await tempDir();
  const key = await generateKeypair({ kid: 'release' });
  const signed = await writePack(join(root, 'packs', 'signed'), 'signed', '1.0.0');
  await signPack(signed, { privateKeyPem: key.privateKeyPem, kid: key.kid });
  await writePack(join(root, 'packs', 'unsigned'), 'unsigned', '1.0.0');
  await buildStaticStore(join(root, 'packs'), { out: join(root, 'store') });
  const store = await openStore({ url: join(root, 'store'), env: {}, cacheDir: false });
  const selectorFor = async (publicKeyPem: string): Promise<KeySelector> => {
    const trustRoot = await loadPackTrustRoot({ keys: { release: publicKeyPem }, env: {} });
    return (kid, at) => selectTrustedKey(trustRoot, kid, { at });
  };
  return { root, key, store, selectorFor, home: join(root, 'home') };
}

describe('a trust root given without requireSigned is never ignored (issue 9 W11)', () => {
  it('a pack.sig that does not verify against it is refused, nothing installed', async () => {
    const { store, selectorFor, home } = await fixture();
    const stranger = await generateKeypair({ kid: 'release' });
    const error = await failure(
      installPack(
        store,
        { type: 'pack', slug: 'signed' },
        { home, selectKey: await selectorFor(stranger.publicKeyPem) },
      ),
    );
    expect(isStoreError(error)).toBe(true);
    expect(error?.code).toBe('ERR_SIGNATURE_REFUSED');
    expect(error?.verification?.kind).toBe('invalid');
    expect(await readdir(join(home, 'agents', 'signed'))).toEqual([]);
  });

  it('a trust root that cannot answer refuses a signed pack (could not check is not passed)', async () => {
    const { store, home } = await fixture();
    const error = await failure(
      installPack(
        store,
        { type: 'pack', slug: 'signed' },
        {
          home,
          selectKey: () => ({ kind: 'trust-root-unavailable', reason: 'the JWKS is down' }),
        },
      ),
    );
    expect(error?.code).toBe('ERR_SIGNATURE_REFUSED');
    expect(await readdir(join(home, 'agents', 'signed'))).toEqual([]);
  });

  it('a signature that verifies is reported verified; an unsigned pack installs, reported unsigned', async () => {
    const { store, key, selectorFor, home } = await fixture();
    const selectKey = await selectorFor(key.publicKeyPem);
    const signed = await installPack(store, { type: 'pack', slug: 'signed' }, { home, selectKey });
    expect(signed.verification?.kind).toBe('verified');
    const unsigned = await installPack(
      store,
      { type: 'pack', slug: 'unsigned' },
      { home, selectKey },
    );
    expect(unsigned.verification?.kind).toBe('unsigned');
    expect(await readFile(join(unsigned.dir, 'agent.yaml'), 'utf8')).toContain('unsigned');
  });
});

describe('PACKWARDEN_REQUIRE_SIGNED_PACK with an unrecognised value is an error, never "off" (issue 9 W8)', () => {
  for (const value of ['required', 'y', 'enabled', '2']) {
    it(`${value}: ERR_INVALID_ARGUMENT before anything is fetched or written`, async () => {
      const { store, home } = await fixture();
      const error = await failure(
        installPack(
          store,
          { type: 'pack', slug: 'unsigned' },
          { home, env: { PACKWARDEN_REQUIRE_SIGNED_PACK: value } },
        ),
      );
      expect(isStoreError(error)).toBe(true);
      expect(error?.code).toBe('ERR_INVALID_ARGUMENT');
      expect(error?.message).toContain('PACKWARDEN_REQUIRE_SIGNED_PACK');
      expect(await readdir(home).catch(() => [])).toEqual([]);
    });
  }
});
