import { isPackManifestError, parseStrictJson } from '@packwarden/pack-manifest/resolve';
// A namespace import, not the `z` object: bundlers keep only what is used (see pack-manifest).
import * as z from 'zod';
import { TrustRootError } from './errors.js';
import {
  importJwk,
  importPem,
  kidSchema,
  revokedByPem,
  saysRevoked,
  type KeyImport,
} from './key-import.js';
import { TRUST_ROOT_LIMITS } from './limits.js';

/**
 * The shapes a key document may take:
 * - `map`: `{ "<kid>": "<PEM>" }`, a value may also be `{ publicPem, notBefore?, notAfter?, revoked? }`;
 * - `jwks`: `{ "keys": [JWK, …] }`, a JWK may carry `notBefore`, `notAfter`, `revoked`;
 * - `list`: `[{ kid, publicPem, notBefore?, notAfter?, revoked? }, …]` (the control plane's `/api/keys`).
 */
export type KeyDocumentShape = 'map' | 'jwks' | 'list';

const pemRecordSchema = z.object({ publicPem: z.string() }).loose();
const listRecordSchema = z.object({ kid: kidSchema, publicPem: z.string() }).loose();

/** Parses JSON text (or an already parsed value) into one import outcome per listed key. */
export function parseKeyDocument(
  input: unknown,
  shapes: readonly KeyDocumentShape[],
  what: string,
): KeyImport[] {
  const document = typeof input === 'string' ? parseJson(input, what) : input;
  const shape = shapeOf(document);
  if (shape === undefined || !shapes.includes(shape)) {
    throw new TrustRootError('ERR_KEYS_PARSE', `${what} is not ${describeShapes(shapes)}.`);
  }
  if (shape === 'jwks') {
    const keys = (document as { keys: unknown[] }).keys;
    assertCount(keys.length, what);
    return keys.map((jwk) => importJwk(jwk));
  }
  if (shape === 'list') {
    const list = document as unknown[];
    assertCount(list.length, what);
    return list.map((entry, index) => {
      const record = listRecordSchema.safeParse(entry);
      if (!record.success) {
        // Keep the kid of an unreadable entry (a `{kid, revoked: true}` without publicPem), as a
        // JWK's is kept: a kid listed twice is ambiguous however broken one of its entries is.
        const kid = kidSchema.safeParse((entry as { kid?: unknown } | null)?.kid);
        const failed = {
          ok: false,
          ...(kid.success ? { kid: kid.data } : {}),
          reason: 'invalid-key',
          message: `entry ${index} of ${what} is not {kid, publicPem}`,
        } as const;
        // Unusable, but a revocation it states still holds for its key under every other kid.
        return saysRevoked(entry)
          ? revokedByPem(failed, (entry as { publicPem?: unknown }).publicPem)
          : failed;
      }
      return importPem(record.data.kid, record.data.publicPem, record.data);
    });
  }
  const entries = Object.entries(document as Record<string, unknown>);
  assertCount(entries.length, what);
  return entries.map(([kid, value]): KeyImport => {
    const kidResult = kidSchema.safeParse(kid);
    if (!kidResult.success) {
      return {
        ok: false,
        reason: 'missing-kid',
        message: `${what} has a key whose kid is refused: ${kidResult.error.issues[0]?.message ?? 'invalid kid'}`,
      };
    }
    if (typeof value === 'string') return importPem(kid, value);
    const record = pemRecordSchema.safeParse(value);
    if (!record.success) {
      return {
        ok: false,
        kid,
        reason: 'invalid-key',
        message: `key "${kid}" is neither a PEM string nor {publicPem}`,
      };
    }
    return importPem(kid, record.data.publicPem, record.data);
  });
}

function parseJson(text: string, what: string): unknown {
  try {
    // The strict parser (pack-manifest README, "Strict JSON"): with JSON.parse a repeated member
    // would silently win, so `{"release": A, "release": B}` would trust B and
    // `"revoked": true, "revoked": false` a revoked key. A repeated member refuses the document.
    return parseStrictJson(text, {
      maxBytes: TRUST_ROOT_LIMITS.maxDocumentBytes,
      maxDepth: TRUST_ROOT_LIMITS.maxDocumentDepth,
      what,
    });
  } catch (cause) {
    if (!isPackManifestError(cause)) throw cause;
    if (cause.code === 'ERR_JSON_TOO_LARGE') {
      throw new TrustRootError(
        'ERR_KEYS_TOO_LARGE',
        `${what} is larger than ${TRUST_ROOT_LIMITS.maxDocumentBytes} bytes.`,
        { cause },
      );
    }
    throw new TrustRootError(
      cause.code === 'ERR_JSON_DUPLICATE_KEY' ? 'ERR_KEYS_DUPLICATE_MEMBER' : 'ERR_KEYS_PARSE',
      `${cause.message}.`,
      { cause },
    );
  }
}

function shapeOf(document: unknown): KeyDocumentShape | undefined {
  if (Array.isArray(document)) return 'list';
  if (typeof document !== 'object' || document === null) return undefined;
  return Array.isArray((document as { keys?: unknown }).keys) ? 'jwks' : 'map';
}

function assertCount(count: number, what: string): void {
  if (count > TRUST_ROOT_LIMITS.maxKeys) {
    throw new TrustRootError(
      'ERR_TOO_MANY_KEYS',
      `${what} lists ${count} keys; at most ${TRUST_ROOT_LIMITS.maxKeys} are accepted.`,
    );
  }
}

function describeShapes(shapes: readonly KeyDocumentShape[]): string {
  const names: Record<KeyDocumentShape, string> = {
    map: 'a JSON object {kid: PEM}',
    jwks: 'a JWKS {"keys": [...]}',
    list: 'a JSON list of {kid, publicPem}',
  };
  return shapes.map((shape) => names[shape]).join(' or ');
}
