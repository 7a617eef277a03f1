import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { calculateJwkThumbprint, compactVerify, importJWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { computePackDigest, digestManifestLines } from '@packwarden/pack-digest';
import {
  FILE_LIST_MAX_ENTRIES,
  generateKeypair,
  PACK_SIGNATURE_MAX_BYTES,
  parsePackSignature,
  PackSignatureError,
  signPack,
  verifyPack,
  type PackSignatureErrorCode,
} from '../src/index.js';
import {
  cleanupTemps,
  makePack,
  makeSigner,
  makeTemp,
  agentYaml,
  type TestSigner,
} from './helpers.js';

let signer: TestSigner;
beforeAll(async () => {
  signer = await makeSigner('release-1');
});
afterAll(cleanupTemps);

async function expectCode(
  promise: Promise<unknown>,
  code: PackSignatureErrorCode,
): Promise<PackSignatureError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(PackSignatureError);
  expect((error as PackSignatureError).code).toBe(code);
  return error as PackSignatureError;
}

describe('generateKeypair', () => {
  it('makes a P-256 pair whose kid defaults to its RFC 7638 thumbprint', async () => {
    const pair = await generateKeypair();
    expect(pair.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(pair.publicKeyPem).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    expect(pair.publicJwk).toEqual({
      kty: 'EC',
      crv: 'P-256',
      x: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      y: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      kid: pair.thumbprint,
      alg: 'ES256',
      use: 'sig',
    });
    // Computed independently by jose, from the PEM rather than from the JWK we return.
    const fromPem = createPublicKey(pair.publicKeyPem).export({ format: 'jwk' });
    expect(await calculateJwkThumbprint(fromPem as Record<string, string>, 'sha256')).toBe(
      pair.thumbprint,
    );
    expect(pair.kid).toBe(pair.thumbprint);
    const other = await generateKeypair();
    expect(other.thumbprint).not.toBe(pair.thumbprint);
  });

  it('uses a given kid and refuses an unsafe one', async () => {
    const pair = await generateKeypair({ kid: 'store-release-2027-01' });
    expect(pair.kid).toBe('store-release-2027-01');
    expect(pair.publicJwk.kid).toBe('store-release-2027-01');
    for (const kid of ['', 'a/b', '../x', 'a b', 'a\u0000', 'k'.repeat(257)]) {
      await expectCode(generateKeypair({ kid }), 'ERR_INVALID_KID');
    }
  });
});

describe('signPack', () => {
  it('signs {pack, packVersion, digest, iat, digestAlg, files} and writes pack.sig', async () => {
    const pack = await makePack({ name: 'weather', version: '2.0.0-rc.1' });
    const now = new Date('2026-10-01T10:00:00.900Z');
    const signed = await signPack(pack, {
      privateKeyPem: signer.privateKeyPem,
      kid: 'release-1',
      now,
    });
    const digest = await computePackDigest(pack);
    expect(signed.header).toEqual({ alg: 'ES256', typ: 'JWT', kid: 'release-1' });
    expect(signed.payload).toEqual({
      pack: 'weather',
      packVersion: '2.0.0-rc.1',
      digest: digest.digest,
      iat: Math.floor(now.getTime() / 1000),
      digestAlg: 'packwarden-digest/1',
      files: digest.entries.map((entry) => `${entry.sha256} ${entry.mode} ${entry.path}`),
    });
    expect(digestManifestLines(signed.payload.files ?? [])).toBe(signed.digest);
    expect(signed.fileListOmitted).toBeUndefined();
    expect(signed.entryCount).toBe(digest.entries.length);
    expect(signed.file).toBe(join(pack, 'pack.sig'));
    expect(signed.written).toBe(true);
    expect(await readFile(signed.file, 'utf8')).toBe(`${signed.token}\n`);
    expect(statSync(signed.file).mode & 0o777).toBe(0o644);
    // jose verifies it with the public key alone.
    const { payload, protectedHeader } = await compactVerify(
      signed.token,
      await importJWK(signer.publicJwk, 'ES256'),
      {
        algorithms: ['ES256'],
      },
    );
    expect(protectedHeader).toEqual(signed.header);
    expect(JSON.parse(new TextDecoder().decode(payload))).toEqual(signed.payload);
    // Signing again does not change the digest: the root pack.sig is not content.
    const again = await signPack(pack, {
      privateKeyPem: signer.privateKeyPem,
      kid: 'release-1',
      now,
    });
    expect(again.digest).toBe(signed.digest);
  });

  it('leaves the file list out with fileList: false, and still verifies', async () => {
    const pack = await makePack();
    const signed = await signPack(pack, {
      privateKeyPem: signer.privateKeyPem,
      kid: 'release-1',
      fileList: false,
    });
    expect(signed.payload.files).toBeUndefined();
    expect(signed.fileListOmitted).toBe('disabled');
    const parsed = parsePackSignature(readFileSync(signed.file, 'utf8'));
    expect(parsed.kind === 'present' && 'files' in parsed.payload).toBe(false);
    expect((await verifyPack(pack, { selectKey: signer.selectKey })).kind).toBe('verified');
  });

  it(`keeps the file list up to ${FILE_LIST_MAX_ENTRIES} entries and leaves it out above`, async () => {
    const pack = await makeTemp('big-pack-');
    writeFileSync(join(pack, 'agent.yaml'), agentYaml('big', '1.0.0'));
    mkdirSync(join(pack, 'data'));
    // agent.yaml + 4,999 files = 5,000 entries
    for (let index = 0; index < FILE_LIST_MAX_ENTRIES - 1; index += 1) {
      writeFileSync(join(pack, 'data', `f${index}.txt`), `${index}`);
    }
    const at = await signPack(pack, {
      privateKeyPem: signer.privateKeyPem,
      kid: 'release-1',
      write: false,
    });
    expect(at.entryCount).toBe(FILE_LIST_MAX_ENTRIES);
    expect(at.payload.files).toHaveLength(FILE_LIST_MAX_ENTRIES);
    writeFileSync(join(pack, 'data', 'one-more.txt'), 'x');
    const above = await signPack(pack, { privateKeyPem: signer.privateKeyPem, kid: 'release-1' });
    expect(above.entryCount).toBe(FILE_LIST_MAX_ENTRIES + 1);
    expect(above.payload.files).toBeUndefined();
    expect(above.fileListOmitted).toBe('too-many-entries');
    expect(await verifyPack(pack, { selectKey: signer.selectKey })).toMatchObject({
      kind: 'verified',
      digest: above.digest,
    });
    // Without a list, a change is still refused, just without the per-file diff.
    writeFileSync(join(pack, 'data', 'f7.txt'), 'changed');
    const result = await verifyPack(pack, { selectKey: signer.selectKey });
    expect(result).toMatchObject({ kind: 'invalid', reason: 'digest-mismatch' });
    expect(result.kind === 'invalid' && result.changes).toBeFalsy();
    // 5,000 files written, signed and verified twice: ~20 s alone on a busy 2-core machine.
  }, 180_000);

  it('leaves the file list out when it would push pack.sig past 4 MiB', async () => {
    const pack = await makeTemp('long-paths-');
    writeFileSync(join(pack, 'agent.yaml'), agentYaml('long', '1.0.0'));
    const folder = join(pack, 'a'.repeat(250), 'b'.repeat(250), 'c'.repeat(250));
    mkdirSync(folder, { recursive: true });
    // 4,999 files + agent.yaml = 5,000 entries (within the count limit) of ~830 bytes each:
    // ~4.2 MB of lines, ~5.6 MB once base64url-encoded.
    for (let index = 0; index < 4999; index += 1) writeFileSync(join(folder, `f${index}`), '');
    const big = await signPack(pack, { privateKeyPem: signer.privateKeyPem, kid: 'release-1' });
    expect(big.entryCount).toBe(5000);
    expect(big.fileListOmitted).toBe('too-large');
    expect(big.token.length).toBeLessThan(PACK_SIGNATURE_MAX_BYTES);
    expect(await verifyPack(pack, { selectKey: signer.selectKey })).toMatchObject({
      kind: 'verified',
    });
  }, 180_000);

  it('write: false returns the token without touching the pack', async () => {
    const pack = await makePack();
    const signed = await signPack(pack, {
      privateKeyPem: signer.privateKeyPem,
      kid: 'release-1',
      write: false,
    });
    expect(signed.written).toBe(false);
    expect(existsSync(join(pack, 'pack.sig'))).toBe(false);
    expect(parsePackSignature(signed.token).kind).toBe('present');
  });

  it('refuses a public key, a P-384 key, an RSA or Ed25519 key, and garbage', async () => {
    const pack = await makePack();
    const sign = (privateKeyPem: string): Promise<unknown> =>
      signPack(pack, { privateKeyPem, kid: 'release-1' });
    await expectCode(sign(signer.publicKeyPem), 'ERR_SIGNING_KEY_NOT_PRIVATE');
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' });
    await expectCode(
      sign(p384.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()),
      'ERR_SIGNING_KEY_UNSUPPORTED',
    );
    await expectCode(
      sign(p384.publicKey.export({ format: 'pem', type: 'spki' }).toString()),
      'ERR_SIGNING_KEY_NOT_PRIVATE',
    );
    const secp256k1 = generateKeyPairSync('ec', { namedCurve: 'secp256k1' });
    await expectCode(
      sign(secp256k1.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()),
      'ERR_SIGNING_KEY_UNSUPPORTED',
    );
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    await expectCode(
      sign(rsa.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()),
      'ERR_SIGNING_KEY_UNSUPPORTED',
    );
    const ed = generateKeyPairSync('ed25519');
    await expectCode(
      sign(ed.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()),
      'ERR_SIGNING_KEY_UNSUPPORTED',
    );
    await expectCode(
      sign('-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n'),
      'ERR_SIGNING_KEY_INVALID',
    );
    await expectCode(sign('hello'), 'ERR_SIGNING_KEY_INVALID');
    expect(existsSync(join(pack, 'pack.sig'))).toBe(false);
  });

  it('refuses a kid with path, control or whitespace characters', async () => {
    const pack = await makePack();
    for (const kid of [
      '',
      'a/b',
      'a\\b',
      '..',
      'x..y',
      'a\u0001',
      'a\u001b[31m',
      'a b',
      'a\u202e',
      'k'.repeat(257),
    ]) {
      await expectCode(
        signPack(pack, { privateKeyPem: signer.privateKeyPem, kid }),
        'ERR_INVALID_KID',
      );
    }
    await expectCode(
      signPack(pack, { privateKeyPem: signer.privateKeyPem } as never),
      'ERR_INVALID_KID',
    );
    expect(existsSync(join(pack, 'pack.sig'))).toBe(false);
  });

  it('refuses an invalid or missing manifest, an unreadable tree, and bad options', async () => {
    const options = { privateKeyPem: signer.privateKeyPem, kid: 'release-1' };
    const noManifest = await makeTemp();
    await expectCode(signPack(noManifest, options), 'ERR_MANIFEST_INVALID');
    const badManifest = await makePack();
    writeFileSync(
      join(badManifest, 'agent.yaml'),
      'apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata:\n  name: Not A Name\n',
    );
    await expectCode(signPack(badManifest, options), 'ERR_MANIFEST_INVALID');
    const withFifo = await makePack();
    const { execFileSync } = await import('node:child_process');
    execFileSync('mkfifo', [join(withFifo, 'queue')]);
    await expectCode(signPack(withFifo, options), 'ERR_PACK_UNREADABLE');
    const pack = await makePack();
    await expectCode(signPack(pack, { ...options, now: new Date('nope') }), 'ERR_INVALID_ARGUMENT');
    await expectCode(
      signPack(pack, { ...options, now: new Date('1999-12-31T00:00:00Z') }),
      'ERR_INVALID_ARGUMENT',
    );
    await expectCode(
      signPack(pack, { ...options, fileList: 'no' as never }),
      'ERR_INVALID_ARGUMENT',
    );
    await expectCode(signPack('', options), 'ERR_INVALID_ARGUMENT');
    const aborted = new AbortController();
    aborted.abort();
    await expectCode(signPack(pack, { ...options, signal: aborted.signal }), 'ERR_ABORTED');
    expect(existsSync(join(pack, 'pack.sig'))).toBe(false);
  });
});

describe('writing pack.sig atomically', () => {
  const tempFiles = (pack: string): string[] =>
    readdirSync(pack).filter((name) => name.endsWith('.tmp'));

  it('replaces a pack.sig symlink instead of writing through it', async () => {
    const pack = await makePack();
    const outside = join(await makeTemp(), 'victim.txt');
    writeFileSync(outside, 'do not overwrite\n');
    symlinkSync(outside, join(pack, 'pack.sig'));
    const signed = await signPack(pack, { privateKeyPem: signer.privateKeyPem, kid: 'release-1' });
    expect(readFileSync(outside, 'utf8')).toBe('do not overwrite\n');
    expect(lstatSync(join(pack, 'pack.sig')).isFile()).toBe(true);
    expect(readFileSync(join(pack, 'pack.sig'), 'utf8')).toBe(`${signed.token}\n`);
  });

  it('on a failed write leaves no temporary file and no partial pack.sig', async () => {
    const pack = await makePack();
    // A non-empty folder named pack.sig cannot be replaced by rename().
    mkdirSync(join(pack, 'pack.sig'));
    writeFileSync(join(pack, 'pack.sig', 'keep'), 'x');
    const error = await expectCode(
      signPack(pack, { privateKeyPem: signer.privateKeyPem, kid: 'release-1' }),
      'ERR_SIGNATURE_WRITE',
    );
    expect(error.message).toContain('pack.sig: it is a folder; move it out of the way');
    expect(tempFiles(pack)).toEqual([]);
    expect(readdirSync(join(pack, 'pack.sig'))).toEqual(['keep']);
  });

  it('writes pack.sig with mode 0644 whatever the umask', async () => {
    const pack = await makePack();
    const previous = process.umask(0o077);
    try {
      await signPack(pack, { privateKeyPem: signer.privateKeyPem, kid: 'release-1' });
    } finally {
      process.umask(previous);
    }
    expect(statSync(join(pack, 'pack.sig')).mode & 0o777).toBe(0o644);
  });

  it('a failed signing keeps the previous pack.sig byte for byte', async () => {
    const pack = await makePack();
    const first = await signPack(pack, { privateKeyPem: signer.privateKeyPem, kid: 'release-1' });
    writeFileSync(join(pack, 'agent.yaml'), 'not: [valid');
    await expectCode(
      signPack(pack, { privateKeyPem: signer.privateKeyPem, kid: 'release-1' }),
      'ERR_MANIFEST_INVALID',
    );
    expect(readFileSync(join(pack, 'pack.sig'), 'utf8')).toBe(`${first.token}\n`);
  });

  it('a concurrent reader only ever sees a complete token', async () => {
    const pack = await makePack({
      files: [
        { path: 'AGENTS.md', content: 'x'.repeat(200_000) },
        ...Array.from({ length: 300 }, (_, i) => ({ path: `f/${i}`, content: `${i}` })),
      ],
    });
    await signPack(pack, { privateKeyPem: signer.privateKeyPem, kid: 'release-1' });
    let done = false;
    const seen = new Set<string>();
    const reader = (async (): Promise<number> => {
      let reads = 0;
      while (!done) {
        const text = readFileSync(join(pack, 'pack.sig'), 'latin1');
        const parsed = parsePackSignature(text);
        expect(parsed.kind).toBe('present');
        seen.add(text);
        reads += 1;
        await new Promise((resolve) => setImmediate(resolve));
      }
      return reads;
    })();
    for (let round = 0; round < 15; round += 1) {
      await signPack(pack, {
        privateKeyPem: signer.privateKeyPem,
        kid: 'release-1',
        now: new Date(Date.UTC(2026, 0, 1, 0, 0, round)),
      });
    }
    done = true;
    expect(await reader).toBeGreaterThan(15);
    expect(seen.size).toBeGreaterThan(1);
    expect(tempFiles(pack)).toEqual([]);
    rmSync(join(pack, 'pack.sig'));
  });
});

describe('leftovers of a signer that was killed', () => {
  it('removes a dead signer’s temporary pack.sig before digesting, so it never becomes content', async () => {
    const pack = await makePack();
    const clean = (await computePackDigest(pack)).digest;
    // A pid that cannot be running: above the largest pid Linux hands out.
    const leftover = join(pack, '.pack.sig.4194399.0123456789ab.tmp');
    writeFileSync(leftover, 'half a token');
    const signed = await signPack(pack, { privateKeyPem: signer.privateKeyPem, kid: signer.kid });
    expect(existsSync(leftover)).toBe(false);
    expect(signed.payload.digest).toBe(clean);
    expect((await verifyPack(pack, { selectKey: signer.selectKey })).kind).toBe('verified');
  });

  it('refuses to race a signer that is still running, and leaves its file alone', async () => {
    const pack = await makePack();
    const live = join(pack, `.pack.sig.${process.pid}.0123456789ab.tmp`);
    writeFileSync(live, 'in progress');
    await expectCode(
      signPack(pack, { privateKeyPem: signer.privateKeyPem, kid: signer.kid }),
      'ERR_SIGNING_IN_PROGRESS',
    );
    expect(existsSync(live)).toBe(true);
    expect(existsSync(join(pack, 'pack.sig'))).toBe(false);
    // A look-alike that does not match the pattern exactly is content, not a leftover.
    const lookalike = join(pack, '.pack.sig.12.notatemp.tmp');
    writeFileSync(lookalike, 'content');
    rmSync(live);
    await signPack(pack, { privateKeyPem: signer.privateKeyPem, kid: signer.kid });
    expect(existsSync(lookalike)).toBe(true);
  });
});
