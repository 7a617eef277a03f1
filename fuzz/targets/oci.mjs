// The OCI client's parsers of registry-controlled input (issue 12): `oci://` references,
// `WWW-Authenticate` challenges and pack manifests (mutations of a valid one, and arbitrary
// bytes). Promises checked (packages/store-client/OCI.md):
// - each returns or throws StoreError with its own codes, nothing else, within a time bound;
// - an accepted reference re-formats to a reference that parses to the same parts, and its
//   registry and repository cannot smuggle a path, user info or query into a URL;
// - an accepted manifest is exactly the pack artifact: one layer of the pack media type with a
//   sha256 digest, a size within the limit, the empty config.
import { performance } from 'node:perf_hooks';
import {
  buildPackManifest,
  DEFAULT_OCI_LIMITS,
  formatOciReference,
  OCI_DIGEST_PATTERN,
  OCI_REPOSITORY_PATTERN,
  PACK_LAYER_MEDIA_TYPE,
  OCI_EMPTY_DIGEST,
  parseAuthChallenge,
  parseOciReference,
  parsePackManifest,
  StoreError,
} from '../../packages/store-client/dist/index.js';

/* global structuredClone */
const TIME_BOUND_MS = 1000;
const REF_CODES = new Set(['ERR_OCI_REF_INVALID', 'ERR_OCI_PLAIN_HTTP_REFUSED']);
const CHALLENGE_CODES = new Set(['ERR_OCI_AUTH_CHALLENGE_INVALID']);
const MANIFEST_CODES = new Set(['ERR_OCI_MANIFEST_INVALID', 'ERR_OCI_BLOB_TOO_LARGE']);

const GOOD = JSON.parse(
  buildPackManifest(
    { name: 'reviewer', version: '1.2.0', digest: 'a'.repeat(64), signer: 'k' },
    { digest: `sha256:${'b'.repeat(64)}`, size: 1234 },
  ).bytes.toString(),
);
const HOSTILE = [
  null,
  -1,
  1.5,
  2 ** 53,
  '',
  '../x',
  'sha256:',
  `sha512:${'c'.repeat(128)}`,
  'application/vnd.oci.image.layer.v1.tar+gzip',
  PACK_LAYER_MEDIA_TYPE,
  [],
  {},
  ['https://evil/x'],
  'A'.repeat(5000),
  '\u0000',
];
const PATHS = [
  ['mediaType'],
  ['artifactType'],
  ['schemaVersion'],
  ['config'],
  ['config', 'digest'],
  ['config', 'size'],
  ['layers'],
  ['layers', 0],
  ['layers', 0, 'digest'],
  ['layers', 0, 'size'],
  ['layers', 0, 'mediaType'],
  ['layers', 0, 'urls'],
  ['layers', 1],
  ['annotations'],
  ['annotations', 'org.opencontainers.image.title'],
  ['annotations', 'dev.packwarden.pack.digest'],
  ['annotations', '__proto__'],
];

function mutate(edits) {
  const m = structuredClone(GOOD);
  for (const [pathIndex, valueIndex, remove] of edits) {
    const path = PATHS[pathIndex % PATHS.length];
    let node = m;
    for (const key of path.slice(0, -1)) {
      if (node === null || typeof node !== 'object') break;
      node = node[key];
    }
    if (node === null || typeof node !== 'object') continue;
    const last = path.at(-1);
    if (remove) delete node[last];
    else node[last] = structuredClone(HOSTILE[valueIndex % HOSTILE.length]);
  }
  return JSON.stringify(m);
}

function timed(what, fn, codes) {
  const started = performance.now();
  let result;
  try {
    result = fn();
  } catch (error) {
    if (!(error instanceof StoreError) || !codes.has(error.code)) {
      throw new Error(`${what} threw an untyped or foreign error: ${error?.code ?? ''} ${error}`, {
        cause: error,
      });
    }
  }
  const ms = performance.now() - started;
  if (ms > TIME_BOUND_MS) throw new Error(`${what} took ${ms.toFixed(0)} ms`);
  return result;
}

export const target = {
  name: 'oci',
  arbitrary: (fc) =>
    fc.oneof(
      fc.record({
        kind: fc.constant('ref'),
        text: fc.oneof(
          fc.string({ maxLength: 600 }).map((s) => `oci://${s}`),
          fc
            .tuple(
              fc.constantFrom('ghcr.io', 'localhost:5000', '127.0.0.1', '[::1]:80', 'a.b-c.d:443'),
              fc.stringMatching(/^[a-z0-9._/-]{0,80}$/),
              fc.constantFrom('', ':1.0.0', ':_x', `@sha256:${'d'.repeat(64)}`, ':', '@'),
            )
            .map(([h, r, s]) => `oci://${h}/${r}${s}`),
        ),
        plainHttp: fc.boolean(),
      }),
      fc.record({
        kind: fc.constant('challenge'),
        text: fc.oneof(
          fc.string({ maxLength: 500 }),
          fc
            .array(
              fc.constantFrom(
                'Bearer',
                'Basic',
                ' ',
                ',',
                '=',
                '"',
                '\\',
                'realm',
                'service',
                'scope',
                'x',
                '"https://a/t"',
              ),
              { maxLength: 60 },
            )
            .map((parts) => parts.join('')),
        ),
      }),
      fc.record({
        kind: fc.constant('manifest'),
        text: fc.oneof(
          fc.array(fc.tuple(fc.nat(), fc.nat(), fc.boolean()), { maxLength: 4 }).map(mutate),
          fc.string({ maxLength: 400 }),
        ),
      }),
    ),
  async check(input) {
    if (input.kind === 'ref') {
      const ref = timed(
        'parseOciReference',
        () => parseOciReference(input.text, { plainHttp: input.plainHttp }),
        REF_CODES,
      );
      if (!ref) return;
      if (!OCI_REPOSITORY_PATTERN.test(ref.repository))
        throw new Error(`accepted repository ${ref.repository}`);
      if (/[@/?#\s]/.test(ref.registry))
        throw new Error(`registry ${ref.registry} smuggles URL parts`);
      if (ref.digest !== undefined && !OCI_DIGEST_PATTERN.test(ref.digest))
        throw new Error('bad digest accepted');
      if (ref.plainHttp && !input.plainHttp) throw new Error('plain HTTP without being asked');
      if (ref.baseUrl.pathname !== '/' || ref.baseUrl.username || ref.baseUrl.search)
        throw new Error('base URL carries more than an origin');
      const again = parseOciReference(formatOciReference(ref), { plainHttp: input.plainHttp });
      for (const key of ['registry', 'repository', 'tag', 'digest']) {
        if (again[key] !== ref[key]) throw new Error(`${key} does not round-trip`);
      }
    } else if (input.kind === 'challenge') {
      const c = timed('parseAuthChallenge', () => parseAuthChallenge(input.text), CHALLENGE_CODES);
      if (c && c.scheme !== 'basic' && c.scheme !== 'bearer') throw new Error(`scheme ${c.scheme}`);
      if (c?.scheme === 'bearer' && !c.realm) throw new Error('bearer without realm accepted');
    } else {
      const m = timed(
        'parsePackManifest',
        () => parsePackManifest(Buffer.from(input.text), DEFAULT_OCI_LIMITS),
        MANIFEST_CODES,
      );
      if (!m) return;
      if (m.layers.length !== 1 || m.layers[0].mediaType !== PACK_LAYER_MEDIA_TYPE)
        throw new Error('layers accepted');
      if (!OCI_DIGEST_PATTERN.test(m.layers[0].digest)) throw new Error('layer digest accepted');
      if (
        !Number.isSafeInteger(m.layers[0].size) ||
        m.layers[0].size < 0 ||
        m.layers[0].size > DEFAULT_OCI_LIMITS.maxLayerBytes
      )
        throw new Error('layer size accepted');
      if (m.config.digest !== OCI_EMPTY_DIGEST) throw new Error('config accepted');
    }
  },
};
