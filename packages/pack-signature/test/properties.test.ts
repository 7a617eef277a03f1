import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePackSignature, signPack, verifyPack } from '../src/index.js';
import { cleanupTemps, makePack, makeSigner, type TestSigner } from './helpers.js';

// The invariants of fuzz/targets/pack-sig.mjs, on the sources, in a short run.

let signer: TestSigner;
let pack: string;
let token: string;
beforeAll(async () => {
  signer = await makeSigner('release-1');
  pack = await makePack();
  ({ token } = await signPack(pack, {
    privateKeyPem: signer.privateKeyPem,
    kid: signer.kid,
    now: new Date('2026-09-15T08:00:00Z'),
  }));
});
afterAll(cleanupTemps);

const KINDS = ['verified', 'invalid', 'unsigned', 'untrusted-key', 'digest-unsupported'];

describe('mutated pack.sig tokens (property)', () => {
  it('the real token verifies (control)', async () => {
    writeFileSync(join(pack, 'pack.sig'), `${token}\n`);
    expect((await verifyPack(pack, { selectKey: signer.selectKey })).kind).toBe('verified');
  });

  it('no altered token verifies; every answer is a documented result', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            at: fc.nat(),
            insert: fc.oneof(
              fc.constantFrom('', '.', '=', ' ', '\n', 'A', '-', '_', '+', '\u00e9'),
              fc.string({ maxLength: 3 }),
            ),
            remove: fc.nat({ max: 3 }),
          }),
          { minLength: 1, maxLength: 4 },
        ),
        async (edits) => {
          let text = `${token}\n`;
          for (const { at, insert, remove } of edits) {
            const i = at % (text.length + 1);
            text = text.slice(0, i) + insert + text.slice(i + remove);
          }
          const parsed = parsePackSignature(text);
          expect(['present', 'malformed']).toContain(parsed.kind);
          writeFileSync(join(pack, 'pack.sig'), text);
          const result = await verifyPack(pack, { selectKey: signer.selectKey });
          expect(KINDS).toContain(result.kind);
          if (text !== token && text !== `${token}\n`) expect(result.kind).not.toBe('verified');
        },
      ),
      { numRuns: 200 },
    );
  });
});
