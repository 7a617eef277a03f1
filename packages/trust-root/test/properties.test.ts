import fc from 'fast-check';
import { kidProblem } from '@packwarden/pack-manifest/resolve';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadPackTrustRoot, type PackTrustRoot } from '../src/index.js';
import { makeKey, type TestKey } from './helpers/keys.js';

// The invariants of fuzz/targets/trust-keys.mjs, on the sources, in a short run.

let release: TestKey;
let other: TestKey;
beforeAll(async () => {
  [release, other] = await Promise.all([makeKey('release'), makeKey('other')]);
});

/** JSON text of `value` with the member number `pick` (document order) given a second time. */
function withRepeatedMember(value: unknown, pick: number, second: unknown): string | undefined {
  let counter = 0;
  let repeated = false;
  const render = (node: unknown): string => {
    if (Array.isArray(node)) return `[${node.map(render).join(',')}]`;
    if (node === null || typeof node !== 'object') return JSON.stringify(node);
    const members: string[] = [];
    for (const [name, child] of Object.entries(node)) {
      members.push(`${JSON.stringify(name)}:${render(child)}`);
      if (counter++ === pick) {
        members.push(`${JSON.stringify(name)}:${JSON.stringify(second)}`);
        repeated = true;
      }
    }
    return `{${members.join(',')}}`;
  };
  const text = render(value);
  return repeated ? text : undefined;
}

async function load(text: string, as: 'inline' | 'jwks'): Promise<PackTrustRoot> {
  return as === 'inline'
    ? loadPackTrustRoot({ keys: text, env: {}, cacheDir: false })
    : loadPackTrustRoot({
        jwksUrl: 'https://keys.example/jwks',
        env: {},
        cacheDir: false,
        fetch: (async () => new Response(text, { status: 200 })) as typeof fetch,
      });
}

describe('key documents (property)', () => {
  it('a document that repeats any member, at any level, never yields a trusted key', async () => {
    const documents = () => [
      { release: release.pem, other: other.pem },
      { release: { publicPem: release.pem, revoked: true } },
      { keys: [release.jwk, other.jwk] },
      { keys: [{ ...release.jwk, revoked: true }] },
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: 3 }),
        fc.nat({ max: 14 }),
        fc.oneof(
          fc.constantFrom<unknown>(other.pem, false, true, other.jwk, [other.jwk]),
          fc.jsonValue({ maxDepth: 2 }),
        ),
        fc.constantFrom('inline' as const, 'jwks' as const),
        async (base, pick, second, as) => {
          const text = withRepeatedMember(documents()[base], pick, second);
          fc.pre(text !== undefined);
          const root = await load(text!, as);
          expect(root.status).toBe('unavailable');
          expect(root.keys).toEqual([]);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('any JSON: ok with rule-abiding kids, or unavailable with a documented code', async () => {
    const codes = [
      'ERR_KEYS_PARSE',
      'ERR_KEYS_DUPLICATE_MEMBER',
      'ERR_TOO_MANY_KEYS',
      'ERR_KEY_INVALID',
      'ERR_NO_USABLE_KEYS',
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue({ maxDepth: 5 }).map((value) => JSON.stringify(value)),
          fc.string({ maxLength: 60 }),
          fc
            .dictionary(fc.string({ maxLength: 6 }), fc.constant(release.pem), { maxKeys: 3 })
            .map((value) => JSON.stringify(value)),
        ),
        fc.constantFrom('inline' as const, 'jwks' as const),
        async (text, as) => {
          const root = await load(text, as);
          if (root.status === 'unavailable') expect(codes).toContain(root.code);
          else expect(root.status).toBe('ok');
          for (const key of root.keys) expect(kidProblem(key.kid)).toBeUndefined();
        },
      ),
      { numRuns: 300 },
    );
  });
});
