import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { loadPackTrustRoot, selectTrustedKey } from '@packwarden/trust-root';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  describePackRefusal,
  generateKeypair,
  PACK_SIGNATURE_MAX_CLOCK_SKEW_SECONDS,
  PACK_VERIFICATION_EXIT_CODES,
  PackSignatureError,
  signPack,
  verifyPack,
  type GeneratedKeypair,
} from '../src/index.js';
import { cleanupTemps, makePack, makeSigner, makeTemp, type TestSigner } from './helpers.js';

let signer: TestSigner;
beforeAll(async () => {
  signer = await makeSigner('release-1');
});
afterAll(cleanupTemps);

async function packSignedAt(now: Date, key: { privateKeyPem: string; kid: string } = signer) {
  const pack = await makePack();
  await signPack(pack, { privateKeyPem: key.privateKeyPem, kid: key.kid, now });
  return pack;
}

describe('a signature dated in the future (issue 9)', () => {
  it('iat in 2099 is invalid / issued-in-future, with the real clock', async () => {
    const pack = await packSignedAt(new Date('2099-01-01T00:00:00Z'));
    const result = await verifyPack(pack, { selectKey: signer.selectKey });
    expect(result).toMatchObject({ kind: 'invalid', reason: 'issued-in-future', kid: 'release-1' });
    expect(PACK_VERIFICATION_EXIT_CODES[result.kind]).toBe(1);
    expect(describePackRefusal(result).title).toBe('The signature is dated in the future');
    // The refusal leaves the pack as it was.
    expect(readdirSync(pack).sort()).toEqual(
      ['.claude', 'AGENTS.md', 'agent.yaml', 'data', 'pack.sig', 'skills'].sort(),
    );
  });

  it('the clock is injected: the skew bound is exactly 5 minutes', async () => {
    const signedAt = new Date('2026-09-15T08:00:00Z');
    const pack = await packSignedAt(signedAt);
    const verifyAt = (offsetSeconds: number) =>
      verifyPack(pack, {
        selectKey: signer.selectKey,
        now: () => new Date(signedAt.getTime() - offsetSeconds * 1000),
      });
    expect(PACK_SIGNATURE_MAX_CLOCK_SKEW_SECONDS).toBe(300);
    expect((await verifyAt(300)).kind).toBe('verified');
    expect(await verifyAt(301)).toMatchObject({ kind: 'invalid', reason: 'issued-in-future' });
    expect((await verifyAt(-86_400 * 365)).kind).toBe('verified');
  });

  it('a clock that is not a function, or answers an invalid Date, is a caller error', async () => {
    const pack = await packSignedAt(new Date('2026-09-15T08:00:00Z'));
    for (const now of [42, () => new Date('nope')]) {
      await expect(
        verifyPack(pack, { selectKey: signer.selectKey, now: now as () => Date }),
      ).rejects.toMatchObject({ name: PackSignatureError.name, code: 'ERR_INVALID_ARGUMENT' });
    }
  });
});

describe('a key set planted in the trust-root cache (issue 9, finding 2)', () => {
  let release: GeneratedKeypair;
  let attacker: GeneratedKeypair;
  let server: Server;
  let url: string;
  let up = true;

  beforeAll(async () => {
    release = await generateKeypair({ kid: 'release' });
    attacker = await generateKeypair({ kid: 'attacker' });
    server = createServer((_request, response) => {
      if (!up) return void response.writeHead(503).end();
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ keys: [release.publicJwk] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** The attack of the issue: a fresh, well-formed entry naming the attacker's key, no pin. */
  async function plantCache(cacheDir: string): Promise<void> {
    mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
    const now = new Date();
    const fields = {
      kind: 'jwks',
      url,
      body: JSON.stringify({ keys: [attacker.publicJwk] }),
      fetchedAt: now.toISOString(),
      validatedAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + 3_600_000).toISOString(),
    };
    // Where earlier releases looked, in their format; and where this one looks, with a MAC the
    // attacker had to make up.
    const legacy = createHash('sha256').update(`jwks\n${url}`).digest('hex').slice(0, 32);
    writeFileSync(
      join(cacheDir, `jwks-${legacy}.json`),
      JSON.stringify({ version: 1, ...fields }),
      {
        mode: 0o600,
      },
    );
    const current = createHash('sha256').update(`jwks\n${url}\n`).digest('hex').slice(0, 32);
    writeFileSync(
      join(cacheDir, `jwks-${current}.json`),
      JSON.stringify({ version: 2, ...fields, pins: [], mac: 'A'.repeat(43) }),
      { mode: 0o600 },
    );
  }

  it.each([
    ['the source answers', true],
    ['the source is down', false],
  ])('%s: the attacker-signed pack is not verified', async (_name, sourceUp) => {
    up = sourceUp;
    const state = await makeTemp('state-');
    const cacheDir = join(state, 'packwarden', 'cache', 'trust-root');
    await plantCache(cacheDir);
    const planted = readdirSync(cacheDir).map((name) => readFileSync(join(cacheDir, name), 'utf8'));
    const pack = await packSignedAt(new Date(Date.now() - 60_000), attacker);

    const root = await loadPackTrustRoot({ jwksUrl: url, env: {}, cacheDir });
    const result = await verifyPack(pack, {
      selectKey: (kid, at) => selectTrustedKey(root, kid, { at }),
    });
    expect(result.kind).not.toBe('verified');
    expect(result.kind).toBe(sourceUp ? 'untrusted-key' : 'trust-root-unavailable');
    if (!sourceUp) {
      // Nothing was written over the planted files: the cache is simply not believed.
      expect(
        readdirSync(cacheDir).map((name) => readFileSync(join(cacheDir, name), 'utf8')),
      ).toEqual(planted);
    }
  });

  it('control: a pack signed by the published key verifies through the same cache folder', async () => {
    up = true;
    const state = await makeTemp('state-');
    const cacheDir = join(state, 'packwarden', 'cache', 'trust-root');
    const pack = await packSignedAt(new Date(Date.now() - 60_000), release);
    const root = await loadPackTrustRoot({ jwksUrl: url, env: {}, cacheDir });
    const result = await verifyPack(pack, {
      selectKey: (kid, at) => selectTrustedKey(root, kid, { at }),
    });
    expect(result.kind).toBe('verified');
  });
});
