// Trust-root key documents (issue 16, finding 5): keys files / inline keys and JWKS bodies, as
// arbitrary JSON, real documents with a member repeated at any level, and byte-level mutations
// of real documents, loaded by the built @packwarden/trust-root as inline keys and as a JWKS
// served through an injected fetch. Promises checked (packages/trust-root/README.md "Key
// documents", "Error codes"):
// - loadPackTrustRoot never rejects for a document: the root is `ok` or `unavailable` with a
//   documented code, within a time bound;
// - never a key trusted from a document that repeats a member;
// - every trusted key has a kid that passes the one kid rule (no control or bidi characters).
import { generateKeyPairSync } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { kidProblem } from '../../packages/pack-manifest/dist/resolve-entry.js';
import { loadPackTrustRoot } from '../../packages/trust-root/dist/index.js';

const TIME_BOUND_MS = 2000;
const CODES = new Set([
  'ERR_KEYS_TOO_LARGE',
  'ERR_KEYS_PARSE',
  'ERR_KEYS_DUPLICATE_MEMBER',
  'ERR_TOO_MANY_KEYS',
  'ERR_KEY_INVALID',
  'ERR_NO_USABLE_KEYS',
]);

function p256(kid) {
  const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' });
  return {
    kid,
    jwk: { ...jwk, kid, alg: 'ES256', use: 'sig' },
    pem: publicKey.export({ type: 'spki', format: 'pem' }),
  };
}
const release = p256('release');
const other = p256('other');

/** Real documents, as objects: rendered to text (and mutated) by the arbitraries. */
const DOCUMENTS = [
  { release: release.pem, other: other.pem },
  { release: { publicPem: release.pem, revoked: true, notAfter: 1_900_000_000 } },
  { keys: [release.jwk, other.jwk] },
  { keys: [{ ...release.jwk, revoked: false, notBefore: '2026-01-01T00:00:00Z' }] },
];

/**
 * Renders `value` as JSON, repeating the member at `pick` (counted over every object member in
 * document order) with `replacement` as its second value. Returns the text and whether a member
 * was repeated.
 */
function renderWithDuplicate(value, pick, replacement) {
  let counter = 0;
  let repeated = false;
  const render = (node) => {
    if (Array.isArray(node)) return `[${node.map(render).join(',')}]`;
    if (node === null || typeof node !== 'object') return JSON.stringify(node);
    const members = [];
    for (const [name, child] of Object.entries(node)) {
      members.push(`${JSON.stringify(name)}:${render(child)}`);
      if (counter++ === pick) {
        members.push(`${JSON.stringify(name)}:${JSON.stringify(replacement)}`);
        repeated = true;
      }
    }
    return `{${members.join(',')}}`;
  };
  return { text: render(value), repeated };
}

const HOSTILE = [
  '\u202e',
  '\u0000',
  '"',
  '\\u0000',
  '{',
  '}',
  '[',
  ']',
  ',',
  ':',
  '__proto__',
  'kid',
  'keys',
  'revoked',
  'true',
  'false',
];

export const target = {
  name: 'trust-keys',
  arbitrary: (fc) =>
    fc.record({
      as: fc.constantFrom('inline', 'jwks'),
      document: fc.oneof(
        fc
          .jsonValue({ maxDepth: 6 })
          .map((value) => ({ text: JSON.stringify(value), repeated: false })),
        fc
          .record({
            base: fc.nat({ max: DOCUMENTS.length - 1 }),
            pick: fc.nat({ max: 12 }),
            replacement: fc.oneof(
              fc.constantFrom(other.pem, release.pem, other.jwk, false, true, [other.jwk], 'x'),
              fc.jsonValue({ maxDepth: 2 }),
            ),
          })
          .map(({ base, pick, replacement }) =>
            renderWithDuplicate(DOCUMENTS[base], pick, replacement),
          ),
        fc
          .record({
            base: fc.nat({ max: DOCUMENTS.length - 1 }),
            edits: fc.array(
              fc.record({
                at: fc.nat(),
                insert: fc.oneof(fc.constantFrom(...HOSTILE), fc.string({ maxLength: 4 })),
                remove: fc.nat({ max: 4 }),
              }),
              { maxLength: 4 },
            ),
          })
          .map(({ base, edits }) => {
            let text = JSON.stringify(DOCUMENTS[base]);
            for (const { at, insert, remove } of edits) {
              const i = at % (text.length + 1);
              text = text.slice(0, i) + insert + text.slice(i + remove);
            }
            // A mutation may itself repeat a member; only constructed repeats are asserted on.
            return { text, repeated: false };
          }),
      ),
    }),
  async check({ as, document }) {
    const started = performance.now();
    const options =
      as === 'inline'
        ? { keys: document.text, env: {}, cacheDir: false }
        : {
            jwksUrl: 'https://keys.example/jwks',
            env: {},
            cacheDir: false,
            fetch: async () =>
              new globalThis.Response(document.text, {
                status: 200,
                headers: { 'content-type': 'application/json' },
              }),
          };
    let root;
    try {
      root = await loadPackTrustRoot(options);
    } catch (error) {
      throw new Error(`loadPackTrustRoot rejected: ${error?.code ?? ''} ${error?.stack ?? error}`, {
        cause: error,
      });
    }
    const elapsed = performance.now() - started;
    if (elapsed > TIME_BOUND_MS) throw new Error(`load took ${Math.round(elapsed)} ms`);
    if (root.status === 'unavailable') {
      if (!CODES.has(root.code)) throw new Error(`undocumented code ${root.code}`);
      if (root.keys.length !== 0) throw new Error('an unavailable root holds keys');
      return;
    }
    if (root.status !== 'ok') throw new Error(`status ${root.status} for a configured source`);
    if (document.repeated) {
      throw new Error(`a document repeating a member was trusted: ${document.text.slice(0, 200)}`);
    }
    for (const key of root.keys) {
      if (kidProblem(key.kid) !== undefined)
        throw new Error(`trusted kid ${JSON.stringify(key.kid)}`);
    }
  },
};
