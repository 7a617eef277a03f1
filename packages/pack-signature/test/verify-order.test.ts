/**
 * The order of verifyPack's answers where issue 14 moved work: jose's second signature check runs
 * beside the content checks (its refusal must still win over anything they find), and the content
 * is digested before a `files` claim is judged (a bad claim must still be reported first).
 *
 * jose is the real library throughout, except in the tests that need it to disagree with Node's
 * ECDSA: no real token does (both check the same ES256 signature), so `joseVerdict` replaces its
 * answer, later or at once, to stand for a parser difference between the two.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { JWSSignatureVerificationFailed } from 'jose/errors';
import type * as JoseCompactVerify from 'jose/jws/compact/verify';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  signEngine,
  signPack,
  verifyEngine,
  verifyPack,
  type PackVerification,
} from '../src/index.js';
import {
  cleanupTemps,
  makePack,
  makeSigner,
  makeTemp,
  payloadFor as payloadAt,
  writeSignedPayload as writeSigned,
  type TestSigner,
} from './helpers.js';

/** When set, what jose's compactVerify answers instead of checking (after `delayMs`). */
let joseVerdict: { accepts: boolean; delayMs: number } | undefined;
let joseCalls = 0;

// es256.ts imports compactVerify from its own subpath (issue 14: the whole of jose was ~14 ms of
// importing this package), so that is the module replaced here.
vi.mock('jose/jws/compact/verify', async (importOriginal) => {
  const real = await importOriginal<typeof JoseCompactVerify>();
  return {
    ...real,
    compactVerify: async (...args: Parameters<typeof real.compactVerify>) => {
      joseCalls++;
      const verdict = joseVerdict;
      if (verdict === undefined) return real.compactVerify(...args);
      await new Promise((resolve) => setTimeout(resolve, verdict.delayMs));
      if (!verdict.accepts) throw new JWSSignatureVerificationFailed();
      return real.compactVerify(...args);
    },
  };
});

let signer: TestSigner;
const SIGNED_AT = new Date('2026-09-15T08:00:00Z');

beforeAll(async () => {
  signer = await makeSigner('release-1');
});
afterEach(() => {
  joseVerdict = undefined;
});
afterAll(cleanupTemps);

async function signedPack(): Promise<string> {
  const pack = await makePack();
  await signPack(pack, { privateKeyPem: signer.privateKeyPem, kid: signer.kid, now: SIGNED_AT });
  return pack;
}

const verify = (pack: string, now?: () => Date): Promise<PackVerification> =>
  verifyPack(pack, { selectKey: signer.selectKey, ...(now ? { now } : {}) });

const writeSignedPayload = (pack: string, payload: Record<string, unknown>): void =>
  writeSigned(pack, payload, signer);

const payloadFor = (pack: string) => payloadAt(pack, SIGNED_AT);

describe('jose refuses what Node accepted: bad-signature wins over every later answer', () => {
  it('the real jose agrees with Node on a good pack, and is asked once', async () => {
    const pack = await signedPack();
    const before = joseCalls;
    expect(await verify(pack)).toMatchObject({ kind: 'verified' });
    expect(joseCalls - before).toBe(1);
  });

  it('an unchanged pack, a changed pack, a bad payload: all bad-signature', async () => {
    const unchanged = await signedPack();
    const changed = await signedPack();
    writeFileSync(join(changed, 'AGENTS.md'), 'tampered\n');
    const badPayload = await signedPack();
    writeSignedPayload(badPayload, { ...(await payloadFor(badPayload)), extra: true });
    const future = await signedPack();
    writeSignedPayload(future, { ...(await payloadFor(future)), iat: 4_000_000_000 });

    // What each answers when jose agrees, so that bad-signature below is jose's doing.
    expect(await verify(unchanged)).toMatchObject({ kind: 'verified' });
    expect(await verify(changed)).toMatchObject({ reason: 'digest-mismatch' });
    expect(await verify(badPayload)).toMatchObject({ reason: 'payload-invalid' });
    expect(await verify(future)).toMatchObject({ reason: 'issued-in-future' });

    for (const delayMs of [0, 40]) {
      joseVerdict = { accepts: false, delayMs };
      for (const pack of [unchanged, changed, badPayload, future]) {
        expect(await verify(pack), `${pack}, jose after ${delayMs} ms`).toMatchObject({
          kind: 'invalid',
          reason: 'bad-signature',
          kid: 'release-1',
        });
      }
    }
  });

  it('a caller error found after the signature check gives way to jose refusing', async () => {
    const pack = await signedPack();
    const badClock = () => new Date(Number.NaN);
    await expect(verify(pack, badClock)).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
    joseVerdict = { accepts: false, delayMs: 10 };
    expect(await verify(pack, badClock)).toMatchObject({ reason: 'bad-signature' });
  });

  it('a slow jose that agrees: verified, and the answer waited for it', async () => {
    const pack = await signedPack();
    joseVerdict = { accepts: true, delayMs: 60 };
    const started = performance.now();
    expect(await verify(pack)).toMatchObject({ kind: 'verified' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(55);
  });

  it('engine.sig: the same order', async () => {
    const dir = await makeTemp('engine-');
    writeFileSync(
      join(dir, 'engine.manifest.json'),
      JSON.stringify({ version: 2, id: 'echo', entry: './engine.mjs', engineExport: 'Engine' }),
    );
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'echo', version: '1.4.0' }));
    writeFileSync(join(dir, 'engine.mjs'), 'export class Engine { async run() {} }\n');
    await signEngine(dir, { privateKeyPem: signer.privateKeyPem, kid: signer.kid });
    const check = () => verifyEngine(dir, { selectKey: signer.selectKey });
    expect(await check()).toMatchObject({ kind: 'verified' });
    joseVerdict = { accepts: false, delayMs: 0 };
    expect(await check()).toMatchObject({ kind: 'invalid', reason: 'bad-signature' });
    joseVerdict = undefined;
    writeFileSync(join(dir, 'engine.mjs'), 'export class Engine {}\n');
    expect(await check()).toMatchObject({ reason: 'digest-mismatch' });
    joseVerdict = { accepts: false, delayMs: 20 };
    expect(await check()).toMatchObject({ kind: 'invalid', reason: 'bad-signature' });
  });
});

describe('the files claim is judged after the digest, and still answers first', () => {
  it('a claim naming exactly the tree, with another signed digest: files-mismatch', async () => {
    const pack = await signedPack();
    writeSignedPayload(pack, { ...(await payloadFor(pack)), digest: 'b'.repeat(64) });
    expect(await verify(pack)).toMatchObject({ kind: 'invalid', reason: 'files-mismatch' });
  });

  it('a claim one line short of the tree, digest of the tree: files-mismatch', async () => {
    const pack = await signedPack();
    const payload = await payloadFor(pack);
    writeSignedPayload(pack, { ...payload, files: (payload['files'] as string[]).slice(1) });
    expect(await verify(pack)).toMatchObject({ kind: 'invalid', reason: 'files-mismatch' });
  });

  it('a claim that is not canonical, on a pack that cannot be digested: payload-invalid first', async () => {
    const pack = await signedPack();
    const payload = await payloadFor(pack);
    writeSignedPayload(pack, { ...payload, files: [...(payload['files'] as string[])].reverse() });
    execFileSync('mkfifo', [join(pack, 'skills', 'pipe')]);
    expect(await verify(pack)).toMatchObject({ kind: 'invalid', reason: 'payload-invalid' });
    // With the claim fixed, the same pack is refused for its content.
    writeSignedPayload(pack, payload);
    expect(await verify(pack)).toMatchObject({ kind: 'invalid', reason: 'pack-unreadable' });
  });

  it('a canonical claim, then the tree changed: digest-mismatch naming the change', async () => {
    const pack = await signedPack();
    writeFileSync(join(pack, 'AGENTS.md'), 'tampered\n');
    expect(await verify(pack)).toMatchObject({
      kind: 'invalid',
      reason: 'digest-mismatch',
      changes: { modified: ['AGENTS.md'] },
    });
  });

  it('a claim whose every line matches but the signed pack.sig path is listed: payload-invalid', async () => {
    const pack = await signedPack();
    const payload = await payloadFor(pack);
    const files = [...(payload['files'] as string[]), `${'0'.repeat(64)} f pack.sig`].sort();
    writeSignedPayload(pack, { ...payload, files });
    expect(readFileSync(join(pack, 'pack.sig'), 'utf8')).toMatch(/^ey/);
    expect(await verify(pack)).toMatchObject({ kind: 'invalid', reason: 'payload-invalid' });
  });
});
