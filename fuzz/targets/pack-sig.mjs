// pack.sig (issue 16): a real token made by the built @packwarden/pack-signature for a real pack,
// mutated at the character level, at the segment level (header and payload re-encoded with
// repeated members, extra parameters, other algorithms, whitespace), and with its signature
// flipped, then verified against a real trust root that trusts the signing key. Promises checked
// (packages/pack-signature/README.md "verifyPack", "The strict pre-parser"):
// - a token that differs from the signed one never verifies;
// - verifyPack only resolves (never rejects: no caller error here) with a documented kind, and
//   parsePackSignature only returns `present` or `malformed` with a documented reason;
// - bounded time per verification.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  generateKeypair,
  parsePackSignature,
  signPack,
  verifyPack,
} from '../../packages/pack-signature/dist/index.js';
import { loadPackTrustRoot, selectTrustedKey } from '../../packages/trust-root/dist/index.js';

const TIME_BOUND_MS = 3000;
const KINDS = new Set(['verified', 'invalid', 'unsigned', 'untrusted-key', 'digest-unsupported']);
const MALFORMED = new Set([
  'empty',
  'trailing-data',
  'whitespace',
  'padding',
  'invalid-character',
  'segment-count',
  'non-canonical-base64url',
  'invalid-json',
  'duplicate-key',
  'not-an-object',
  'alg',
  'header-parameter',
  'typ',
  'kid',
  'iat',
  'signature-length',
  'too-large',
]);

const pack = mkdtempSync(join(tmpdir(), 'fuzz-pack-sig-'));
process.on('exit', () => rmSync(pack, { recursive: true, force: true }));
writeFileSync(
  join(pack, 'agent.yaml'),
  'apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata:\n  name: fuzz-pack\n  version: 1.0.0\nspec:\n  engine: claude\n',
);
mkdirSync(join(pack, 'skills'));
writeFileSync(join(pack, 'AGENTS.md'), 'Be careful.\n');
writeFileSync(join(pack, 'skills', 'a.md'), '# a\n');

const key = await generateKeypair({ kid: 'release' });
const { token: TOKEN } = await signPack(pack, {
  privateKeyPem: key.privateKeyPem,
  kid: key.kid,
  now: new Date(Date.now() - 3_600_000),
});
const root = await loadPackTrustRoot({
  keys: { release: key.publicKeyPem },
  env: {},
  cacheDir: false,
});
const selectKey = (kid, at) => selectTrustedKey(root, kid, { at });
const [HEADER, PAYLOAD, SIGNATURE] = TOKEN.split('.');
const decode = (segment) => Buffer.from(segment, 'base64url').toString('utf8');
const encode = (text) => Buffer.from(text, 'utf8').toString('base64url');

// The unaltered token must verify, or every check below would pass for the wrong reason.
{
  writeFileSync(join(pack, 'pack.sig'), `${TOKEN}\n`);
  const result = await verifyPack(pack, { selectKey });
  if (result.kind !== 'verified')
    throw new Error(`the real token does not verify: ${result.message}`);
}

const JSON_EDITS = [
  (json) => json.replace(/^\{/, '{"alg":"ES256",'),
  (json) => json.replace(/^\{/, '{"kid":"other",'),
  (json) => json.replace(/^\{/, '{"iat":1,'),
  (json) => json.replace(/^\{/, '{"pack":"evil",'),
  (json) => json.replace('"ES256"', '"none"'),
  (json) => json.replace('"ES256"', '"HS256"'),
  (json) => json.replace(/\}$/, ',"crit":["b64"]}'),
  (json) => json.replace(/\}$/, ',"jwk":{}}'),
  (json) => json.replace(/:/g, ' : '),
  (json) => `\ufeff${json}`,
  (json) => json.replace('"kid"', '"k\\u0069d"'),
  (json) => json.replace(/"iat":\d+/, '"iat":4102444799'),
  (json) => json.replace(/"version"|"packVersion":"[^"]*"/, '"packVersion":"9.9.9"'),
];

export const target = {
  name: 'pack-sig',
  arbitrary: (fc) =>
    fc.oneof(
      // Character edits anywhere in the token (the trailing newline included).
      fc
        .array(
          fc.record({
            at: fc.nat(),
            insert: fc.oneof(
              fc.constantFrom('', '.', '=', ' ', '\n', 'A', '-', '_', '+', '/', '\u00e9', '\u0000'),
              fc.string({ maxLength: 3 }),
            ),
            remove: fc.nat({ max: 3 }),
          }),
          { minLength: 1, maxLength: 4 },
        )
        .map((edits) => {
          let text = `${TOKEN}\n`;
          for (const { at, insert, remove } of edits) {
            const i = at % (text.length + 1);
            text = text.slice(0, i) + insert + text.slice(i + remove);
          }
          return { text };
        }),
      // Header or payload re-encoded after a JSON-level edit, the signature kept.
      fc
        .record({ part: fc.constantFrom(0, 1), edit: fc.nat({ max: JSON_EDITS.length - 1 }) })
        .map(({ part, edit }) => {
          const segments = [HEADER, PAYLOAD, SIGNATURE];
          segments[part] = encode(JSON_EDITS[edit](decode(segments[part])));
          return { text: `${segments.join('.')}\n` };
        }),
      // A flipped bit in the signature.
      fc.record({ byte: fc.nat({ max: 63 }), bit: fc.nat({ max: 7 }) }).map(({ byte, bit }) => {
        const signature = Buffer.from(SIGNATURE, 'base64url');
        signature[byte] ^= 1 << bit;
        return { text: `${HEADER}.${PAYLOAD}.${signature.toString('base64url')}\n` };
      }),
    ),
  async check({ text }) {
    const parsed = parsePackSignature(text);
    if (parsed.kind === 'malformed' && !MALFORMED.has(parsed.reason)) {
      throw new Error(`undocumented malformed reason ${parsed.reason}`);
    }
    if (parsed.kind !== 'malformed' && parsed.kind !== 'present') {
      throw new Error(`parsePackSignature answered ${parsed.kind}`);
    }
    writeFileSync(join(pack, 'pack.sig'), text);
    const started = performance.now();
    const result = await verifyPack(pack, { selectKey });
    const elapsed = performance.now() - started;
    if (elapsed > TIME_BOUND_MS) throw new Error(`verification took ${Math.round(elapsed)} ms`);
    if (!KINDS.has(result.kind)) throw new Error(`undocumented kind ${result.kind}`);
    const same = text === TOKEN || text === `${TOKEN}\n`;
    if (result.kind === 'verified' && !same) {
      throw new Error(`an altered token verified: ${JSON.stringify(text)}`);
    }
  },
};
