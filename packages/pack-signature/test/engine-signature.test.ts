import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import {
  ENGINE_SIGNATURE_FILE,
  PACK_SIGNATURE_FILE,
  PackSignatureError,
  readEngineIdentity,
  signEngine,
  signPack,
  verifyEngine,
  verifyPack,
} from '../src/index.js';
import {
  cleanupTemps,
  makePack,
  makeSigner,
  makeTemp,
  writeFiles,
  type TestSigner,
} from './helpers.js';

afterEach(cleanupTemps);

async function makeEngine(id = 'echo', version: string | null = '1.4.0'): Promise<string> {
  const dir = await makeTemp('engine-');
  writeFiles(dir, [
    {
      path: 'engine.manifest.json',
      content: JSON.stringify({ version: 2, id, entry: './engine.mjs', engineExport: 'Engine' }),
    },
    { path: 'engine.mjs', content: 'export class Engine { async run() {} }\n' },
    { path: 'lib/util.mjs', content: 'export const x = 1;\n' },
    ...(version === null
      ? []
      : [{ path: 'package.json', content: JSON.stringify({ name: id, version }) }]),
  ]);
  return dir;
}

describe('engine.sig', () => {
  test('signEngine writes engine.sig binding id, package.json version and digest; verifyEngine passes it', async () => {
    const signer = await makeSigner();
    const dir = await makeEngine();
    const signed = await signEngine(dir, { privateKeyPem: signer.privateKeyPem, kid: signer.kid });
    expect(signed.file).toBe(join(dir, ENGINE_SIGNATURE_FILE));
    expect(readFileSync(signed.file, 'utf8')).toBe(`${signed.token}\n`);
    expect(signed.payload).toMatchObject({
      engine: 'echo',
      engineVersion: '1.4.0',
      digestAlg: 'packwarden-digest/1',
    });
    expect(Object.keys(signed.payload).sort()).toEqual(
      ['digest', 'digestAlg', 'engine', 'engineVersion', 'iat'].sort(),
    );
    const result = await verifyEngine(dir, { selectKey: signer.selectKey, expectedId: 'echo' });
    expect(result.kind).toBe('verified');
    expect(result).toMatchObject({ engine: 'echo', engineVersion: '1.4.0', kid: signer.kid });
  });

  test('without package.json the version is 0.0.0 (the AgentHippo store index rule)', async () => {
    const signer = await makeSigner();
    const dir = await makeEngine('grok', null);
    const signed = await signEngine(dir, { privateKeyPem: signer.privateKeyPem, kid: signer.kid });
    expect(signed.payload.engineVersion).toBe('0.0.0');
    expect((await verifyEngine(dir, { selectKey: signer.selectKey })).kind).toBe('verified');
  });

  test('one byte changed, a file added, or the version bumped after signing is refused', async () => {
    const signer = await makeSigner();
    for (const tamper of [
      (dir: string) => writeFileSync(join(dir, 'lib/util.mjs'), 'export const x = 2;\n'),
      (dir: string) => writeFileSync(join(dir, 'extra.mjs'), 'import "node:fs";\n'),
      (dir: string) => writeFileSync(join(dir, 'package.json'), '{"version":"1.5.0"}'),
    ]) {
      const dir = await makeEngine();
      await signEngine(dir, { privateKeyPem: signer.privateKeyPem, kid: signer.kid });
      tamper(dir);
      const result = await verifyEngine(dir, { selectKey: signer.selectKey });
      expect(result.kind).toBe('invalid');
      expect(['digest-mismatch', 'identity-mismatch']).toContain(
        (result as { reason: string }).reason,
      );
    }
  });

  test('an unsigned engine is unsigned; another key is untrusted-key; another expected id is refused', async () => {
    const signer = await makeSigner('trusted');
    const other = await makeSigner('stranger');
    const dir = await makeEngine();
    expect((await verifyEngine(dir, { selectKey: signer.selectKey })).kind).toBe('unsigned');
    await signEngine(dir, { privateKeyPem: other.privateKeyPem, kid: other.kid });
    expect((await verifyEngine(dir, { selectKey: signer.selectKey })).kind).toBe('untrusted-key');
    expect((await verifyEngine(dir, { selectKey: other.selectKey })).kind).toBe('verified');
    const wrongId = await verifyEngine(dir, { selectKey: other.selectKey, expectedId: 'ghost' });
    expect(wrongId).toMatchObject({ kind: 'invalid', reason: 'identity-mismatch' });
  });

  test('a pack.sig never verifies as an engine signature (copied in as engine.sig)', async () => {
    const signer = await makeSigner();
    const pack = await makePack({ name: 'echo', version: '1.4.0' });
    await signPack(pack, { privateKeyPem: signer.privateKeyPem, kid: signer.kid });
    const dir = await makeEngine();
    copyFileSync(join(pack, PACK_SIGNATURE_FILE), join(dir, ENGINE_SIGNATURE_FILE));
    const result = await verifyEngine(dir, { selectKey: signer.selectKey });
    expect(result).toMatchObject({ kind: 'invalid', reason: 'payload-invalid' });
  });

  test('an engine.sig never verifies as a pack signature (copied in as pack.sig)', async () => {
    const signer = await makeSigner();
    const dir = await makeEngine('demo', '1.2.3');
    await signEngine(dir, { privateKeyPem: signer.privateKeyPem, kid: signer.kid });
    const pack = await makePack({ name: 'demo', version: '1.2.3' });
    copyFileSync(join(dir, ENGINE_SIGNATURE_FILE), join(pack, PACK_SIGNATURE_FILE));
    const result = await verifyPack(pack, { selectKey: signer.selectKey });
    expect(result).toMatchObject({ kind: 'invalid', reason: 'payload-invalid' });
  });

  test('an engine folder holding a pack.sig is neither signed nor verified (the digest would not cover it)', async () => {
    const signer = await makeSigner();
    const dir = await makeEngine();
    writeFileSync(join(dir, PACK_SIGNATURE_FILE), 'anything\n');
    const error = await signEngine(dir, {
      privateKeyPem: signer.privateKeyPem,
      kid: signer.kid,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PackSignatureError);
    expect((error as PackSignatureError).code).toBe('ERR_ENGINE_HOLDS_PACK_SIGNATURE');
    rmSync(join(dir, PACK_SIGNATURE_FILE));
    await signEngine(dir, { privateKeyPem: signer.privateKeyPem, kid: signer.kid });
    writeFileSync(join(dir, PACK_SIGNATURE_FILE), 'planted later\n');
    expect(await verifyEngine(dir, { selectKey: signer.selectKey })).toMatchObject({
      kind: 'invalid',
      reason: 'holds-pack-signature',
    });
  });

  test('a folder without a valid engine.manifest.json cannot be signed', async () => {
    const signer = await makeSigner();
    const dir = await makeTemp('engine-');
    writeFileSync(join(dir, 'engine.manifest.json'), '{"version":1,"id":"x"}');
    const error = await signEngine(dir, {
      privateKeyPem: signer.privateKeyPem,
      kid: signer.kid,
    }).catch((e: unknown) => e);
    expect((error as PackSignatureError).code).toBe('ERR_ENGINE_INVALID');
  });
});

/**
 * Checks one side had and the other lacked before pack.sig and engine.sig shared their steps
 * (issue 13 item 6). Each runs on both sides where both have the check.
 */
describe('engine.sig keeps every check pack.sig has', () => {
  async function signedEngine(): Promise<{ dir: string; signer: TestSigner }> {
    const signer = await makeSigner();
    const dir = await makeEngine();
    await signEngine(dir, { privateKeyPem: signer.privateKeyPem, kid: signer.kid });
    return { dir, signer };
  }

  test('a signature file the OS refuses to open (a socket) is invalid / unreadable, not a rejection', async () => {
    const signer = await makeSigner();
    const pack = await makePack();
    const engine = await makeEngine();
    const servers = await Promise.all(
      [join(pack, PACK_SIGNATURE_FILE), join(engine, ENGINE_SIGNATURE_FILE)].map(
        (path) =>
          new Promise<Server>((resolve) => {
            const server = createServer();
            server.listen(path, () => resolve(server));
          }),
      ),
    );
    try {
      expect(await verifyPack(pack, { selectKey: signer.selectKey })).toMatchObject({
        kind: 'invalid',
        reason: 'pack-unreadable',
        code: 'ERR_SIGNATURE_UNREADABLE',
      });
      expect(await verifyEngine(engine, { selectKey: signer.selectKey })).toMatchObject({
        kind: 'invalid',
        reason: 'engine-unreadable',
        code: 'ERR_SIGNATURE_UNREADABLE',
      });
    } finally {
      await Promise.all(
        servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
      );
    }
  });

  test('an engine.sig symlink, even to a genuine token, is malformed and never followed', async () => {
    const { dir, signer } = await signedEngine();
    const elsewhere = join(await makeTemp(), ENGINE_SIGNATURE_FILE);
    renameSync(join(dir, ENGINE_SIGNATURE_FILE), elsewhere);
    symlinkSync(elsewhere, join(dir, ENGINE_SIGNATURE_FILE));
    expect(await verifyEngine(dir, { selectKey: signer.selectKey })).toMatchObject({
      kind: 'invalid',
      reason: 'malformed',
      malformed: 'not-regular-file',
    });
  });

  test('verifyEngine refuses a signal or clock of the wrong type, as verifyPack does', async () => {
    const { dir, signer } = await signedEngine();
    const pack = await makePack();
    await signPack(pack, { privateKeyPem: signer.privateKeyPem, kid: signer.kid });
    for (const bad of [{ signal: 'stop' }, { now: 42 }, { now: () => new Date('nope') }]) {
      const options = { selectKey: signer.selectKey, ...bad } as never;
      for (const verify of [verifyPack, verifyEngine]) {
        await expect(verify(verify === verifyPack ? pack : dir, options)).rejects.toMatchObject({
          code: 'ERR_INVALID_ARGUMENT',
        });
      }
    }
  });

  test('signEngine refuses a write option that is not a boolean, as signPack does, and writes nothing', async () => {
    const signer = await makeSigner();
    const dir = await makeEngine();
    const pack = await makePack();
    const options = { privateKeyPem: signer.privateKeyPem, kid: signer.kid, write: 'no' } as never;
    await expect(signEngine(dir, options)).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
    await expect(signPack(pack, options)).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
    expect(existsSync(join(dir, ENGINE_SIGNATURE_FILE))).toBe(false);
    expect(existsSync(join(pack, PACK_SIGNATURE_FILE))).toBe(false);
  });

  test('an engine.manifest.json or package.json that is a FIFO is refused without blocking on it', async () => {
    for (const name of ['engine.manifest.json', 'package.json']) {
      const { dir, signer } = await signedEngine();
      rmSync(join(dir, name));
      execFileSync('mkfifo', [join(dir, name)]);
      expect(readEngineIdentity(dir)).toEqual({
        problem: `cannot read ${name}: it is not a regular file`,
      });
      expect(await verifyEngine(dir, { selectKey: signer.selectKey })).toMatchObject({
        kind: 'invalid',
        reason: 'engine-invalid',
      });
    }
  });

  test('package.json that is not UTF-8 is refused, as agent.yaml is', async () => {
    const dir = await makeEngine();
    writeFileSync(
      join(dir, 'package.json'),
      Buffer.concat([
        Buffer.from('{"version":"1.4.0","author":"'),
        Buffer.from([0xff]),
        Buffer.from('"}'),
      ]),
    );
    expect(readEngineIdentity(dir)).toMatchObject({
      problem: expect.stringMatching(/^cannot read package\.json: /),
    });
  });

  test('a dangling pack.sig symlink in an engine folder is refused by signer and verifier', async () => {
    const { dir, signer } = await signedEngine();
    symlinkSync('nowhere', join(dir, PACK_SIGNATURE_FILE));
    expect(await verifyEngine(dir, { selectKey: signer.selectKey })).toMatchObject({
      kind: 'invalid',
      reason: 'holds-pack-signature',
    });
    await expect(
      signEngine(dir, { privateKeyPem: signer.privateKeyPem, kid: signer.kid }),
    ).rejects.toMatchObject({ code: 'ERR_ENGINE_HOLDS_PACK_SIGNATURE' });
  });
});
