import { execFileSync } from 'node:child_process';
import { createPrivateKey, createPublicKey, createHmac, sign as cryptoSign } from 'node:crypto';
import { mkdirSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeCanonicalBase64url } from '../src/base64url.js';
import {
  PACK_SIGNATURE_MAX_BYTES,
  parsePackSignature,
  readPackSignature,
  signPack,
  verifyPack,
  type KeySelector,
  type MalformedReason,
} from '../src/index.js';
import {
  b64,
  cleanupTemps,
  craftToken,
  headerJson,
  makePack,
  makeSigner,
  makeTemp,
  payloadJson,
  type TestSigner,
} from './helpers.js';

let signer: TestSigner;
let pack: string;
let good: string; // a genuine token for `pack`, signed by `signer`
let selectorCalls = 0;
let countingSelector: KeySelector;

beforeAll(async () => {
  signer = await makeSigner('test-key');
  pack = await makePack();
  good = (await signPack(pack, { privateKeyPem: signer.privateKeyPem, kid: 'test-key' })).token;
  countingSelector = (kid, at) => {
    selectorCalls += 1;
    return signer.selectKey(kid, at);
  };
});
afterAll(cleanupTemps);

const craft = (header: string, payload = payloadJson()): string =>
  craftToken(header, payload, signer.privateKeyPem);
const segment = (index: number) => (): string => good.split('.')[index] as string;
const goodHeader = segment(0);
const goodPayload = segment(1);
const goodSignature = segment(2);

/** Writes `text` as pack.sig and checks both the reader and verifyPack refuse it as `reason`. */
async function expectMalformed(text: string | Buffer, reason: MalformedReason): Promise<void> {
  if (typeof text === 'string') {
    const parsed = parsePackSignature(text);
    expect(parsed.kind, `parsePackSignature(${JSON.stringify(text).slice(0, 80)})`).toBe(
      'malformed',
    );
    if (parsed.kind === 'malformed') expect(parsed.reason).toBe(reason);
  }
  writeFileSync(join(pack, 'pack.sig'), text);
  const read = await readPackSignature(pack);
  expect(read).toMatchObject({ kind: 'malformed', reason });
  const before = selectorCalls;
  const result = await verifyPack(pack, { selectKey: countingSelector });
  expect(result).toMatchObject({ kind: 'invalid', reason: 'malformed', malformed: reason });
  // Refused before any key was looked up.
  expect(selectorCalls).toBe(before);
}

describe('the genuine token', () => {
  it('is accepted with one trailing newline, and verifies', async () => {
    writeFileSync(join(pack, 'pack.sig'), `${good}\n`);
    expect(await readPackSignature(pack)).toMatchObject({
      kind: 'present',
      token: good,
      header: { alg: 'ES256', typ: 'JWT', kid: 'test-key' },
      payload: { pack: 'demo', packVersion: '1.2.3' },
    });
    expect((await verifyPack(pack, { selectKey: countingSelector })).kind).toBe('verified');
  });

  it('is accepted without a trailing newline', async () => {
    writeFileSync(join(pack, 'pack.sig'), good);
    expect((await verifyPack(pack, { selectKey: signer.selectKey })).kind).toBe('verified');
  });

  it('an absent pack.sig is absent / unsigned', async () => {
    rmSync(join(pack, 'pack.sig'), { force: true });
    expect(await readPackSignature(pack)).toEqual({ kind: 'absent' });
    expect((await verifyPack(pack, { selectKey: signer.selectKey })).kind).toBe('unsigned');
  });
});

describe('text-level refusals', () => {
  it('refuses an empty file and a lone newline', async () => {
    await expectMalformed('', 'empty');
    await expectMalformed('\n', 'empty');
  });
  it('refuses a second line or anything after the trailing newline', async () => {
    await expectMalformed(`${good}\n\n`, 'trailing-data');
    await expectMalformed(`${good}\nextra`, 'trailing-data');
    await expectMalformed(`${good}\n${good}\n`, 'trailing-data');
  });
  it('refuses whitespace anywhere', async () => {
    await expectMalformed(` ${good}`, 'whitespace');
    await expectMalformed(`${good} `, 'whitespace');
    await expectMalformed(`${good}\r\n`, 'whitespace');
    await expectMalformed(`${goodHeader()}.\t${goodPayload()}.${goodSignature()}`, 'whitespace');
    await expectMalformed(`${goodHeader()} .${goodPayload()}.${goodSignature()}`, 'whitespace');
  });
  it('refuses = padding', async () => {
    // The header of the genuine token is 59 characters: 3 mod 4, so padding would be one "=".
    expect(goodHeader().length % 4).not.toBe(0);
    await expectMalformed(`${goodHeader()}=.${goodPayload()}.${goodSignature()}`, 'padding');
    await expectMalformed(`${good}==`, 'padding');
  });
  it('refuses characters outside base64url (standard base64, non-ASCII bytes)', async () => {
    // Standard base64 spells base64url's "-" and "_" as "+" and "/".
    for (const char of ['+', '/']) {
      await expectMalformed(
        `${goodHeader()}.${goodPayload()}.${char}${goodSignature().slice(1)}`,
        'invalid-character',
      );
    }
    await expectMalformed(`${good}é`, 'invalid-character');
    await expectMalformed(
      Buffer.concat([Buffer.from(good), Buffer.from([0xff])]),
      'invalid-character',
    );
    await expectMalformed(
      `${goodHeader()}.${goodPayload()}.${goodSignature()}\u0000`,
      'invalid-character',
    );
  });
  it('refuses anything but three segments', async () => {
    await expectMalformed(`${goodHeader()}.${goodPayload()}`, 'segment-count');
    await expectMalformed(`${good}.`, 'segment-count');
    await expectMalformed(`${good}.${goodSignature()}`, 'segment-count');
    await expectMalformed('a.b.c.d.e', 'segment-count'); // the shape of a JWE
  });
  it('refuses non-canonical base64url (non-zero unused bits, impossible lengths)', async () => {
    // 64 signature bytes are 86 characters; the last one carries 4 unused bits.
    const signature = goodSignature();
    expect(signature.length).toBe(86);
    const last = signature.at(-1) as string;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const index = alphabet.indexOf(last);
    const sameBytes = alphabet[(index & ~0xf) | ((index & 0xf) ^ 1)] as string;
    const variant = `${signature.slice(0, -1)}${sameBytes}`;
    // Both spellings decode to the same 64 bytes: only canonicality tells them apart.
    expect(Buffer.from(variant, 'base64url').equals(Buffer.from(signature, 'base64url'))).toBe(
      true,
    );
    await expectMalformed(`${goodHeader()}.${goodPayload()}.${variant}`, 'non-canonical-base64url');
    // A length of 1 mod 4 cannot be base64url at all.
    expect((goodHeader().length + 2) % 4).toBe(1);
    await expectMalformed(
      `${goodHeader()}AA.${goodPayload()}.${signature}`,
      'non-canonical-base64url',
    );
  });
});

describe('canonical base64url without encoding again (issue 14)', () => {
  // parseCompactJws decides canonical from the length and the last character; the rule it
  // replaced was "re-encoding the bytes gives back the segment". Both must agree on every segment.
  const reencodes = (segment: string) =>
    segment.length % 4 !== 1 && Buffer.from(segment, 'base64url').toString('base64url') === segment;
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

  it('agrees with re-encoding on every segment of up to 3 characters', () => {
    const segments = [''];
    for (let length = 1; length <= 3; length++) {
      for (const prefix of segments.filter((segment) => segment.length === length - 1)) {
        for (const char of alphabet) segments.push(prefix + char);
      }
    }
    expect(segments.length).toBe(1 + 64 + 64 ** 2 + 64 ** 3);
    let canonical = 0;
    for (const segment of segments) {
      const decoded = decodeCanonicalBase64url(segment);
      expect(decoded !== undefined, segment).toBe(reencodes(segment));
      if (decoded) {
        canonical++;
        expect(Buffer.from(decoded).equals(Buffer.from(segment, 'base64url'))).toBe(true);
      }
    }
    // One spelling per byte string: 1 + 256 + 65,536 of them (no 1-character spelling).
    expect(canonical).toBe(1 + 256 + 256 ** 2);
  });

  it('agrees with re-encoding on longer segments and refuses other alphabets (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom(...alphabet, '+', '/', '=', '.', ' '), maxLength: 200 }),
        (segment) => {
          const decoded = decodeCanonicalBase64url(segment);
          const expected = /^[A-Za-z0-9_-]*$/.test(segment) && reencodes(segment);
          expect(decoded !== undefined, segment).toBe(expected);
        },
      ),
      { numRuns: 3000 },
    );
  });
});

describe('header refusals', () => {
  it('refuses a header that is not UTF-8 JSON or not an object', async () => {
    await expectMalformed(craft('not json'), 'invalid-json');
    await expectMalformed(craft(`\ufeff${headerJson()}`), 'invalid-json');
    await expectMalformed(craft('{"alg":"ES256","kid":"test-key"} x'), 'invalid-json');
    await expectMalformed(
      `${b64(Buffer.from([0xc3, 0x28]))}.${goodPayload()}.${goodSignature()}`,
      'invalid-json',
    );
    await expectMalformed(craft('["ES256"]'), 'not-an-object');
    await expectMalformed(craft('"ES256"'), 'not-an-object');
    await expectMalformed(craft('null'), 'not-an-object');
    await expectMalformed(`.${goodPayload()}.${goodSignature()}`, 'invalid-json');
  });
  it('refuses duplicate keys in the header, escaped spellings included', async () => {
    await expectMalformed(craft('{"alg":"ES256","alg":"ES256","kid":"test-key"}'), 'duplicate-key');
    await expectMalformed(craft('{"alg":"none","alg":"ES256","kid":"test-key"}'), 'duplicate-key');
    await expectMalformed(
      craft('{"alg":"ES256","kid":"test-key","k\\u0069d":"other"}'),
      'duplicate-key',
    );
  });
  it('refuses duplicate keys in the payload', async () => {
    const payload = payloadJson().replace('{', '{"pack":"evil",');
    await expectMalformed(craft(headerJson(), payload), 'duplicate-key');
  });
  it('refuses every alg but ES256', async () => {
    for (const alg of [
      'none',
      'None',
      'NONE',
      'HS256',
      'ES256K',
      'es256',
      'ES384',
      'RS256',
      'PS256',
      'EdDSA',
      'ES256 ',
      '',
    ]) {
      await expectMalformed(craft(headerJson({ alg })), 'alg');
    }
    await expectMalformed(craft(JSON.stringify({ typ: 'JWT', kid: 'test-key' })), 'alg');
    await expectMalformed(craft(headerJson({ alg: ['ES256'] })), 'alg');
  });
  it('refuses an HS256 token MACed with the public key as the secret (key confusion)', async () => {
    const publicPem = createPublicKey(signer.privateKeyPem).export({ type: 'spki', format: 'pem' });
    const signingInput = `${b64(headerJson({ alg: 'HS256' }))}.${b64(payloadJson())}`;
    for (const secret of [publicPem, JSON.stringify(signer.publicJwk)]) {
      const mac = createHmac('sha256', secret).update(signingInput).digest();
      await expectMalformed(`${signingInput}.${b64(mac)}`, 'alg');
    }
  });
  it('refuses header parameters other than alg, typ, kid', async () => {
    for (const extra of [
      { crit: ['b64'] },
      { b64: false },
      { jku: 'https://evil.example/jwks.json' },
      { jwk: signer.publicJwk },
      { x5u: 'https://evil.example/cert.pem' },
      { x5c: ['MIIB'] },
      { x5t: 'abc' },
      { cty: 'JWT' },
      { zip: 'DEF' },
      { nonce: 'x' },
    ]) {
      await expectMalformed(craft(headerJson(extra)), 'header-parameter');
    }
  });
  it('refuses a typ other than JWT', async () => {
    for (const typ of ['jwt', 'JOSE', 'application/jwt', '', 1, null]) {
      await expectMalformed(craft(headerJson({ typ })), 'typ');
    }
    const noTyp = craft(JSON.stringify({ alg: 'ES256', kid: 'test-key' }));
    expect(parsePackSignature(noTyp)).toMatchObject({
      kind: 'present',
      header: { alg: 'ES256', kid: 'test-key' },
    });
  });
  it('refuses a missing or unsafe kid', async () => {
    await expectMalformed(craft(JSON.stringify({ alg: 'ES256', typ: 'JWT' })), 'kid');
    for (const kid of [
      '',
      'k'.repeat(257),
      '../keys/evil',
      'a/b',
      'a\\b',
      '..',
      'a..b',
      'a\u0000b',
      'a\nb',
      'a\u007fb',
      'a\u0085b',
      'a b',
      'a\tb',
      'a\u00a0b',
      'a\u2028b',
      'a\u202eb', // right-to-left override
      'a\u200bb', // zero-width space
      7,
      null,
      ['test-key'],
    ]) {
      await expectMalformed(craft(headerJson({ kid })), 'kid');
    }
    expect(parsePackSignature(craft(headerJson({ kid: 'k'.repeat(256) }))).kind).toBe('present');
    // A lone surrogate cannot even be spelled in the strict JSON.
    await expectMalformed(craft(headerJson({ kid: 'a\ud800b' })), 'invalid-json');
  });
});

describe('messages', () => {
  it('never echo control, bidi or other non-ASCII characters from the token', () => {
    for (const header of [
      headerJson({ alg: 'ES256\u202e\u001b[2J' }),
      headerJson({ 'x\u202e\u0007': 1 }),
      headerJson({ typ: 'JWT\u2028' }),
      '{"alg":"ES256","k\u202e":1,"k\u202e":2}',
    ]) {
      const parsed = parsePackSignature(craft(header));
      expect(parsed.kind).toBe('malformed');
      if (parsed.kind === 'malformed') expect(parsed.message).toMatch(/^[\x20-\x7e…]*$/);
    }
  });
});

describe('payload and signature refusals before key lookup', () => {
  it('refuses a payload that is not a JSON object', async () => {
    await expectMalformed(craft(headerJson(), 'foo'), 'invalid-json');
    await expectMalformed(craft(headerJson(), ''), 'invalid-json');
    await expectMalformed(craft(headerJson(), '[1]'), 'not-an-object');
    await expectMalformed(craft(headerJson(), '{"iat":1790000000,"a":"\\ud800"}'), 'invalid-json');
  });
  it('refuses a payload without a whole-number iat (the key cannot be picked)', async () => {
    for (const iat of [undefined, '1790000000', 1790000000.5, -1, 1e300, null, true]) {
      await expectMalformed(craft(headerJson(), payloadJson({ iat })), 'iat');
    }
  });
  it('refuses signatures that are not 64 bytes: DER, truncated, padded, empty', async () => {
    const signingInput = `${b64(headerJson())}.${b64(payloadJson())}`;
    const der = cryptoSign(
      'sha256',
      Buffer.from(signingInput),
      createPrivateKey(signer.privateKeyPem),
    );
    expect(der.length).not.toBe(64);
    await expectMalformed(`${signingInput}.${b64(der)}`, 'signature-length');
    const raw = Buffer.from(goodSignature(), 'base64url');
    await expectMalformed(
      `${goodHeader()}.${goodPayload()}.${b64(raw.subarray(0, 63))}`,
      'signature-length',
    );
    await expectMalformed(
      `${goodHeader()}.${goodPayload()}.${b64(Buffer.concat([raw, Buffer.from([0])]))}`,
      'signature-length',
    );
    await expectMalformed(
      `${goodHeader()}.${goodPayload()}.${b64(Buffer.concat([Buffer.from([0]), raw]))}`,
      'signature-length',
    );
    await expectMalformed(`${goodHeader()}.${goodPayload()}.`, 'signature-length');
  });
});

describe('file-level refusals', () => {
  it('refuses a pack.sig symlink, even to a genuine token', async () => {
    const elsewhere = join(await makeTemp(), 'pack.sig');
    writeFileSync(elsewhere, `${good}\n`);
    rmSync(join(pack, 'pack.sig'), { force: true });
    symlinkSync(elsewhere, join(pack, 'pack.sig'));
    expect(await readPackSignature(pack)).toMatchObject({
      kind: 'malformed',
      reason: 'not-regular-file',
    });
    expect(await verifyPack(pack, { selectKey: signer.selectKey })).toMatchObject({
      kind: 'invalid',
      malformed: 'not-regular-file',
    });
    rmSync(join(pack, 'pack.sig'));
  });
  it('refuses a pack.sig folder and a FIFO (without blocking on it)', async () => {
    const other = await makePack();
    mkdirSync(join(other, 'pack.sig'));
    expect(await readPackSignature(other)).toMatchObject({
      kind: 'malformed',
      reason: 'not-regular-file',
    });
    const withFifo = await makePack();
    execFileSync('mkfifo', [join(withFifo, 'pack.sig')]);
    expect(await readPackSignature(withFifo)).toMatchObject({
      kind: 'malformed',
      reason: 'not-regular-file',
    });
  });
  it('accepts up to 4 MiB and refuses more, from the size alone', async () => {
    const other = await makePack();
    writeFileSync(join(other, 'pack.sig'), 'A'.repeat(PACK_SIGNATURE_MAX_BYTES));
    // Exactly the limit is read and parsed (and refused for its content, not its size).
    expect(await readPackSignature(other)).toMatchObject({
      kind: 'malformed',
      reason: 'segment-count',
    });
    writeFileSync(join(other, 'pack.sig'), 'A'.repeat(PACK_SIGNATURE_MAX_BYTES + 1));
    expect(await readPackSignature(other)).toMatchObject({
      kind: 'malformed',
      reason: 'too-large',
    });
    // A sparse 64 GiB file: refused at once, which is only possible without reading it.
    truncateSync(join(other, 'pack.sig'), 64 * 1024 ** 3);
    const started = Date.now();
    expect(await verifyPack(other, { selectKey: signer.selectKey })).toMatchObject({
      kind: 'invalid',
      malformed: 'too-large',
    });
    expect(Date.now() - started).toBeLessThan(2000);
  });
  it('parsePackSignature refuses text above 4 MiB', () => {
    expect(parsePackSignature('A'.repeat(PACK_SIGNATURE_MAX_BYTES + 1))).toMatchObject({
      kind: 'malformed',
      reason: 'too-large',
    });
  });
});
