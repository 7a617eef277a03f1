import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  generateKeypair,
  isPackSignatureError,
  KEY_FILE_MAX_BYTES,
  readPrivateKeyFile,
  signPack,
  verifyPacks,
  writePrivateKeyFile,
  writePublicKeysFile,
} from '../src/index.js';
import { cleanupTemps, makePack, makeSigner, makeTemp } from './helpers.js';

afterEach(cleanupTemps);

async function codeOf(work: Promise<unknown>): Promise<string | undefined> {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  return isPackSignatureError(error) ? error.code : `not a PackSignatureError: ${String(error)}`;
}

describe('verifyPacks', () => {
  it('passes unsigned packs unless requireSigned, and reports the first failure', async () => {
    const signer = await makeSigner('release');
    const signed = await makePack({ name: 'signed' });
    await signPack(signed, { privateKeyPem: signer.privateKeyPem, kid: 'release' });
    const unsigned = await makePack({ name: 'unsigned' });
    const tampered = await makePack({ name: 'tampered' });
    await signPack(tampered, { privateKeyPem: signer.privateKeyPem, kid: 'release' });
    writeFileSync(join(tampered, 'AGENTS.md'), 'changed after signing\n');

    const seen: string[] = [];
    const lenient = await verifyPacks([signed, unsigned], {
      selectKey: signer.selectKey,
      onResult: (outcome) => seen.push(outcome.result.kind),
    });
    expect(seen).toEqual(['verified', 'unsigned']);
    expect(lenient.summary).toEqual({ verified: 1, unsigned: 1, failed: 0, total: 2 });
    expect(lenient.exitCode).toBe(0);
    expect(lenient.firstFailure).toBeUndefined();

    const strict = await verifyPacks([signed, unsigned, tampered], {
      selectKey: signer.selectKey,
      requireSigned: true,
    });
    expect(strict.outcomes.map((outcome) => outcome.failed)).toEqual([false, true, true]);
    expect(strict.summary).toEqual({ verified: 1, unsigned: 1, failed: 2, total: 3 });
    // The first failure decides: unsigned is 3, not the later invalid pack's 1.
    expect(strict.exitCode).toBe(3);
    expect(strict.firstFailure?.dir).toBe(unsigned);

    const invalid = await verifyPacks([unsigned, tampered], { selectKey: signer.selectKey });
    expect(invalid.exitCode).toBe(1);
    expect(invalid.firstFailure?.result.kind).toBe('invalid');
  });

  it('fails a pack signed by a key the trust root does not hold (exit code 4)', async () => {
    const stranger = await makeSigner('stranger');
    const trusted = await makeSigner('release');
    const dir = await makePack();
    await signPack(dir, { privateKeyPem: stranger.privateKeyPem, kid: 'stranger' });
    const batch = await verifyPacks([dir], { selectKey: trusted.selectKey });
    expect(batch.outcomes[0]).toMatchObject({ failed: true, result: { kind: 'untrusted-key' } });
    expect(batch.exitCode).toBe(4);
  });
});

describe('key files', () => {
  it('writes a private key 0600 and a public keys file 0644 that round-trip', async () => {
    const dir = await makeTemp();
    const pair = await generateKeypair({ kid: 'release' });
    const privateFile = join(dir, 'release.pem');
    const publicFile = join(dir, 'release.keys.json');
    await writePrivateKeyFile(privateFile, pair.privateKeyPem);
    await writePublicKeysFile(publicFile, { release: pair.publicKeyPem });
    expect(statSync(privateFile).mode & 0o777).toBe(0o600);
    expect(statSync(publicFile).mode & 0o777).toBe(0o644);
    expect(await readPrivateKeyFile(privateFile)).toBe(pair.privateKeyPem);
    expect(JSON.parse(readFileSync(publicFile, 'utf8'))).toEqual({ release: pair.publicKeyPem });
    // openssl reads what was written as an EC P-256 private key.
    const text = execFileSync('openssl', ['pkey', '-in', privateFile, '-noout', '-text'], {
      encoding: 'utf8',
    });
    expect(text).toMatch(/prime256v1|P-256/);
  });

  it('refuses to replace an existing file without force, and replaces it with force', async () => {
    const dir = await makeTemp();
    const file = join(dir, 'key.pem');
    await writePrivateKeyFile(file, 'first');
    expect(await codeOf(writePrivateKeyFile(file, 'second'))).toBe('ERR_KEY_FILE_EXISTS');
    expect(await codeOf(writePublicKeysFile(file, {}))).toBe('ERR_KEY_FILE_EXISTS');
    expect(readFileSync(file, 'utf8')).toBe('first');
    await writePrivateKeyFile(file, 'second', { force: true });
    expect(readFileSync(file, 'utf8')).toBe('second');
  });

  it('replaces a symlink at the path instead of writing through it', async () => {
    const dir = await makeTemp();
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'untouched');
    const link = join(dir, 'key.pem');
    symlinkSync(victim, link);
    await writePrivateKeyFile(link, 'secret', { force: true });
    expect(readFileSync(victim, 'utf8')).toBe('untouched');
    expect(statSync(link).mode & 0o777).toBe(0o600);
  });

  it('reports a write into a missing folder as ERR_KEY_FILE_WRITE', async () => {
    const dir = await makeTemp();
    expect(await codeOf(writePrivateKeyFile(join(dir, 'no', 'key.pem'), 'x'))).toBe(
      'ERR_KEY_FILE_WRITE',
    );
  });

  it('refuses to read a key others can read, a symlink, a folder, a FIFO and an oversized file', async () => {
    const dir = await makeTemp();
    const open = join(dir, 'open.pem');
    writeFileSync(open, 'pem', { mode: 0o644 });
    chmodSync(open, 0o644);
    expect(await codeOf(readPrivateKeyFile(open))).toBe('ERR_KEY_FILE_UNSAFE');

    const safe = join(dir, 'safe.pem');
    writeFileSync(safe, 'pem', { mode: 0o600 });
    symlinkSync(safe, join(dir, 'link.pem'));
    expect(await codeOf(readPrivateKeyFile(join(dir, 'link.pem')))).toBe('ERR_KEY_FILE_UNREADABLE');
    expect(await codeOf(readPrivateKeyFile(dir))).toBe('ERR_KEY_FILE_UNREADABLE');
    expect(await codeOf(readPrivateKeyFile(join(dir, 'missing.pem')))).toBe(
      'ERR_KEY_FILE_UNREADABLE',
    );

    const fifo = join(dir, 'fifo.pem');
    execFileSync('mkfifo', ['-m', '600', fifo]);
    expect(await codeOf(readPrivateKeyFile(fifo))).toBe('ERR_KEY_FILE_UNREADABLE');

    const big = join(dir, 'big.pem');
    writeFileSync(big, 'x'.repeat(KEY_FILE_MAX_BYTES + 1), { mode: 0o600 });
    expect(await codeOf(readPrivateKeyFile(big))).toBe('ERR_KEY_FILE_UNREADABLE');
  });

  it('checks the mode before the size, and reads a key of exactly the largest size', async () => {
    const dir = await makeTemp();
    const big = join(dir, 'big.pem');
    writeFileSync(big, 'x'.repeat(KEY_FILE_MAX_BYTES + 1));
    chmodSync(big, 0o640);
    expect(await codeOf(readPrivateKeyFile(big))).toBe('ERR_KEY_FILE_UNSAFE');
    const largest = join(dir, 'largest.pem');
    writeFileSync(largest, 'x'.repeat(KEY_FILE_MAX_BYTES), { mode: 0o600 });
    chmodSync(largest, 0o600);
    expect(await readPrivateKeyFile(largest)).toHaveLength(KEY_FILE_MAX_BYTES);
  });
});
