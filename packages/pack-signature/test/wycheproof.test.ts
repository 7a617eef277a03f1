/**
 * Project Wycheproof vectors (test/fixtures/wycheproof, see its README for the source).
 *
 * - json_web_signature_test.json: every vector of every group runs through the same pipeline
 *   verifyPack uses (the strict pre-parser, a key taken from a real @packwarden/trust-root built
 *   from the group's public JWK, and checkEs256Jws). Nothing marked `invalid` may be accepted.
 *   `valid` vectors are accepted exactly when they are ES256 with a P-256 signing key: valid
 *   vectors of other algorithms (HS256, RS256, PS*, ES512) are refused by policy, since pack.sig
 *   v1 is ES256 only. The vectors' payload is "foo", not a pack payload, so they stop before the
 *   payload rules (which pack-level tests cover).
 * - ecdsa_secp256r1_sha256_p1363_test.json: every vector through verifyEs256Signature, the
 *   ECDSA check checkEs256Jws runs beside jose.
 * - Neither file has `acceptable` vectors in this version; if one appears it is reported and must
 *   be refused (the strict choice), which these tests enforce.
 */
import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { selectTrustedKey, type PackTrustRoot } from '@packwarden/trust-root';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkEs256Jws, verifyEs256Signature } from '../src/es256.js';
import { parseCompactJws } from '../src/strict-jws.js';
import { fixture, trustRootFor } from './helpers.js';

interface JwsVector {
  tcId: number;
  comment: string;
  jws: unknown;
  result: 'valid' | 'invalid' | 'acceptable';
}
interface JwsGroup {
  comment: string;
  public?: Record<string, unknown>;
  tests: JwsVector[];
}

const jwsFile = JSON.parse(
  readFileSync(fixture('wycheproof/json_web_signature_test.json'), 'utf8'),
) as { testGroups: JwsGroup[] };
const es256Key = jwsFile.testGroups.find((group) => group.comment === 'es256')?.public;

async function rootFor(group: JwsGroup): Promise<PackTrustRoot> {
  // Groups without a public key (HMAC) get the ES256 group's key: the key-confusion setting.
  return trustRootFor({ keys: [group.public ?? es256Key] });
}

/** True when the pipeline accepts the vector's signature. */
async function accepts(jws: unknown, root: PackTrustRoot): Promise<boolean> {
  if (typeof jws !== 'string') return false; // JSON serialisation: never a pack.sig
  const parsed = parseCompactJws(jws);
  if (!parsed.ok) return false;
  const pick = selectTrustedKey(root, parsed.value.header.kid, { at: new Date() });
  if (pick.kind !== 'ok') return false;
  return checkEs256Jws(parsed.value, pick.key.key);
}

describe('Wycheproof JSON Web Signature vectors', () => {
  const outcomes: { group: string; vector: JwsVector; accepted: boolean }[] = [];

  beforeAll(async () => {
    expect(es256Key).toBeDefined();
    for (const group of jwsFile.testGroups) {
      const root = await rootFor(group);
      for (const vector of group.tests) {
        outcomes.push({ group: group.comment, vector, accepted: await accepts(vector.jws, root) });
      }
    }
  });

  it('runs every vector', () => {
    expect(outcomes.length).toBe(
      jwsFile.testGroups.reduce((sum, group) => sum + group.tests.length, 0),
    );
    expect(outcomes.length).toBeGreaterThan(400);
  });

  it('never accepts an invalid (or acceptable) vector', () => {
    const wrong = outcomes.filter(
      (outcome) => outcome.accepted && outcome.vector.result !== 'valid',
    );
    expect(
      wrong.map((outcome) => `${outcome.group} #${outcome.vector.tcId} ${outcome.vector.comment}`),
    ).toEqual([]);
  });

  it('accepts every valid ES256 vector, and only those', () => {
    const es256Groups = new Set(['es256', 'SpecialCaseEs256']);
    const validEs256 = outcomes.filter(
      (outcome) => es256Groups.has(outcome.group) && outcome.vector.result === 'valid',
    );
    expect(validEs256.length).toBeGreaterThanOrEqual(2);
    expect(validEs256.every((outcome) => outcome.accepted)).toBe(true);
    const accepted = outcomes.filter((outcome) => outcome.accepted);
    expect(accepted.map((outcome) => outcome.vector.tcId).sort()).toEqual(
      validEs256.map((outcome) => outcome.vector.tcId).sort(),
    );
  });

  it("refuses the ES256 groups' invalid vectors (modified, truncated, r/s edge cases, HS256 confusion, embedded jwk, encryption keys)", () => {
    const es256Invalid = outcomes.filter(
      (outcome) =>
        /es256|ec_key_for_encryption/i.test(outcome.group) && outcome.vector.result === 'invalid',
    );
    expect(es256Invalid.length).toBeGreaterThan(30);
    expect(es256Invalid.filter((outcome) => outcome.accepted)).toEqual([]);
  });

  it("the valid ES256 vector's signature fails once any byte of it changes", async () => {
    const group = jwsFile.testGroups.find((candidate) => candidate.comment === 'es256') as JwsGroup;
    const valid = group.tests.find((vector) => vector.result === 'valid')?.jws as string;
    const root = await rootFor(group);
    expect(await accepts(valid, root)).toBe(true);
    const [header, payload, signature] = valid.split('.') as [string, string, string];
    for (let index = 0; index < 64; index += 9) {
      const bytes = Buffer.from(signature, 'base64url');
      bytes[index] = (bytes[index] as number) ^ 0x80;
      expect(await accepts(`${header}.${payload}.${bytes.toString('base64url')}`, root)).toBe(
        false,
      );
    }
  });
});

interface P1363Group {
  publicKeyPem: string;
  tests: {
    tcId: number;
    comment: string;
    msg: string;
    sig: string;
    result: 'valid' | 'invalid' | 'acceptable';
  }[];
}
const p1363File = JSON.parse(
  readFileSync(fixture('wycheproof/ecdsa_secp256r1_sha256_p1363_test.json'), 'utf8'),
) as { testGroups: P1363Group[] };

describe('Wycheproof ECDSA P-256 / SHA-256 P1363 vectors', () => {
  it('accepts exactly the valid signatures', () => {
    const wrong: string[] = [];
    let valid = 0;
    let invalid = 0;
    for (const group of p1363File.testGroups) {
      const key = createPublicKey(group.publicKeyPem);
      for (const vector of group.tests) {
        const accepted = verifyEs256Signature(
          Buffer.from(vector.msg, 'hex'),
          Buffer.from(vector.sig, 'hex'),
          key,
        );
        if (vector.result === 'valid') valid += 1;
        else invalid += 1;
        if (accepted !== (vector.result === 'valid'))
          wrong.push(`#${vector.tcId} ${vector.result} ${vector.comment}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(valid).toBeGreaterThan(100);
    expect(invalid).toBeGreaterThan(50);
  });
});
