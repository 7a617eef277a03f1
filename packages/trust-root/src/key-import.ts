import { createPublicKey, type KeyObject } from 'node:crypto';
import { kidProblem } from '@packwarden/pack-manifest/resolve';
// A namespace import, not the `z` object: bundlers keep only what is used (see pack-manifest).
import * as z from 'zod';
import { TRUST_ROOT_LIMITS } from './limits.js';
import { ecThumbprint } from './thumbprint.js';
import type { P256PublicJwk, RejectedKeyReason, TrustedKey } from './types.js';

export type KeyImport =
  | { readonly ok: true; readonly key: TrustedKey }
  | {
      readonly ok: false;
      readonly kid?: string;
      readonly reason: RejectedKeyReason;
      readonly message: string;
      /**
       * The thumbprint of the P-256 key this unusable entry marks `revoked`: the entry is
       * dropped, but its revocation still holds for the key under every other kid.
       */
      readonly revokes?: string;
    };

// One kid rule for the trust root and pack.sig (pack-manifest's `kidProblem`): no control,
// format (bidi overrides, zero-width) or whitespace characters, no path separators or "..", at
// most 256 characters. `trust show` prints kids, and a kid a signature could never name is no key.
export const kidSchema = z.string().superRefine((kid, context) => {
  const problem = kidProblem(kid);
  if (problem !== undefined) context.addIssue({ code: 'custom', message: problem });
});

/** RFC 3339 with an explicit offset, or JWT NumericDate seconds. */
const instantSchema = z.union([
  z.iso.datetime({ offset: true }).transform((text) => new Date(text)),
  z
    .number()
    .int()
    .min(0)
    .max(253_402_300_799)
    .transform((seconds) => new Date(seconds * 1000)),
]);

const metadataSchema = z
  .object({
    notBefore: instantSchema.optional(),
    notAfter: instantSchema.optional(),
    revoked: z.boolean().optional(),
  })
  .refine(
    (meta) =>
      meta.notBefore === undefined ||
      meta.notAfter === undefined ||
      meta.notBefore <= meta.notAfter,
    'notBefore is after notAfter',
  );

type KeyMetadata = z.output<typeof metadataSchema>;

// Canonical too (the unused low bits zero): Node reads `…A` and `…B` as the same coordinate, so a
// second spelling would give the same key a second thumbprint, past its pin and its revocation.
const coordinate = z
  .string()
  .regex(
    /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/,
    'must be 32 bytes as canonical unpadded base64url',
  );

const p256JwkSchema = z.object({
  kty: z.literal('EC'),
  crv: z.literal('P-256'),
  x: coordinate,
  y: coordinate,
  // A key restricted to another algorithm or use must not verify ES256 signatures.
  alg: z.literal('ES256').optional(),
  use: z.literal('sig').optional(),
  key_ops: z
    .array(z.string())
    .max(16)
    .refine((ops) => ops.includes('verify'), 'key_ops does not allow verify')
    .optional(),
});

/** JWK members that carry private or secret key material (RFC 7518 §6.2.2, §6.3.2, §6.4). */
const SECRET_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;

const PEM = /^-----BEGIN PUBLIC KEY-----\r?\n([A-Za-z0-9+/=\r\n]+)-----END PUBLIC KEY-----$/;

/**
 * One JWK from a JWKS: only a public EC P-256 key with a kid becomes a trusted key. A JWK that
 * is refused but says `revoked` still revokes its key (`revokes`).
 */
export function importJwk(raw: unknown): KeyImport {
  const imported = importJwkEntry(raw);
  if (imported.ok || !saysRevoked(raw)) return imported;
  const record = raw as Record<string, unknown>;
  return withRevocation(imported, () =>
    createPublicKey({
      key: { kty: 'EC', crv: 'P-256', x: record['x'] as string, y: record['y'] as string },
      format: 'jwk',
    }),
  );
}

function importJwkEntry(raw: unknown): KeyImport {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { ok: false, reason: 'invalid-key', message: 'a key entry is not a JSON object' };
  }
  const record = raw as Record<string, unknown>;
  const kidResult = kidSchema.safeParse(record['kid']);
  const kid = kidResult.success ? kidResult.data : undefined;
  const label = kid === undefined ? 'a key without a usable kid' : `key "${kid}"`;
  const secret = SECRET_MEMBERS.find((member) => Object.hasOwn(record, member));
  if (secret !== undefined) {
    return withKid(
      kid,
      'private-key',
      `${label} carries private or secret key material ("${secret}") and is dropped`,
    );
  }
  if (record['kty'] !== 'EC' || record['crv'] !== 'P-256') {
    const kty = typeof record['kty'] === 'string' ? record['kty'].slice(0, 20) : '?';
    const crv = typeof record['crv'] === 'string' ? ` ${record['crv'].slice(0, 20)}` : '';
    return withKid(
      kid,
      'unsupported-key',
      `${label} is ${kty}${crv}; only EC P-256 keys are trusted`,
    );
  }
  if (kid === undefined) {
    return {
      ok: false,
      reason: 'missing-kid',
      message: 'an EC P-256 key without a valid kid is dropped',
    };
  }
  const jwk = p256JwkSchema.safeParse(record);
  if (!jwk.success) {
    return withKid(
      kid,
      'invalid-key',
      `${label} is not a valid ES256 verification key: ${summarise(jwk.error)}`,
    );
  }
  const meta = metadataSchema.safeParse(record);
  if (!meta.success) {
    return withKid(
      kid,
      'invalid-key',
      `${label} has invalid validity metadata: ${summarise(meta.error)}`,
    );
  }
  let key: KeyObject;
  try {
    key = createPublicKey({
      key: { kty: 'EC', crv: 'P-256', x: jwk.data.x, y: jwk.data.y },
      format: 'jwk',
    });
  } catch {
    return withKid(kid, 'invalid-key', `${label} is not a point on the P-256 curve`);
  }
  return finish(kid, key, meta.data, { x: jwk.data.x, y: jwk.data.y });
}

/**
 * One `{kid: PEM}` entry, or a `{kid, publicPem}` record: an SPKI public P-256 key. A record that
 * is refused but says `revoked` still revokes its key (`revokes`).
 */
export function importPem(kid: string, pem: unknown, metadata: unknown = {}): KeyImport {
  const imported = importPemEntry(kid, pem, metadata);
  return imported.ok || !saysRevoked(metadata) ? imported : revokedByPem(imported, pem);
}

/**
 * `failed` with `revokes` set when `pem` is an SPKI P-256 public key: for an entry, such as a
 * control-plane record whose kid is refused, that says `revoked` but cannot be used.
 */
export function revokedByPem(failed: KeyImport & { ok: false }, pem: unknown): KeyImport {
  return withRevocation(failed, () => {
    const body = typeof pem === 'string' ? pemBody(pem.trim()) : undefined;
    return body === undefined ? undefined : spkiKey(body);
  });
}

/** The base64 body of one `-----BEGIN PUBLIC KEY-----` block, or `undefined`. */
function pemBody(text: string): string | undefined {
  return PEM.exec(text)?.[1]?.replace(/[\r\n]/g, '');
}

/** The public key of an SPKI body (throws when it is none). */
function spkiKey(body: string): KeyObject {
  return createPublicKey({ key: Buffer.from(body, 'base64'), format: 'der', type: 'spki' });
}

const isP256 = (key: KeyObject): boolean =>
  key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';

/**
 * Whether an entry states a revocation: any `revoked` member but `false`. A revocation the source
 * spelled wrongly (`"true"`, `1`) is still read as one: refusing a key is the safe reading.
 */
export function saysRevoked(record: unknown): boolean {
  return (
    typeof record === 'object' &&
    record !== null &&
    Object.hasOwn(record, 'revoked') &&
    (record as { revoked?: unknown }).revoked !== false
  );
}

function withRevocation(
  failed: KeyImport & { ok: false },
  readKey: () => KeyObject | undefined,
): KeyImport {
  let key: KeyObject | undefined;
  try {
    key = readKey();
  } catch {
    return failed;
  }
  if (key === undefined || !isP256(key)) return failed;
  const { x, y } = key.export({ format: 'jwk' });
  if (typeof x !== 'string' || typeof y !== 'string') return failed;
  return { ...failed, revokes: ecThumbprint({ crv: 'P-256', x, y }) };
}

function importPemEntry(kid: string, pem: unknown, metadata: unknown): KeyImport {
  const label = `key "${kid}"`;
  if (typeof pem !== 'string' || pem.length > TRUST_ROOT_LIMITS.maxPemLength) {
    return {
      ok: false,
      kid,
      reason: 'invalid-key',
      message: `${label} is not a PEM string of at most ${TRUST_ROOT_LIMITS.maxPemLength} characters`,
    };
  }
  const text = pem.trim();
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) {
    return {
      ok: false,
      kid,
      reason: 'private-key',
      message: `${label} is a private key; only public keys belong in a trust root`,
    };
  }
  const body = pemBody(text);
  if (body === undefined) {
    return {
      ok: false,
      kid,
      reason: 'invalid-key',
      message: `${label} is not one "-----BEGIN PUBLIC KEY-----" PEM block`,
    };
  }
  const meta = metadataSchema.safeParse(metadata);
  if (!meta.success) {
    return {
      ok: false,
      kid,
      reason: 'invalid-key',
      message: `${label} has invalid validity metadata: ${summarise(meta.error)}`,
    };
  }
  let key: KeyObject;
  try {
    key = spkiKey(body);
  } catch {
    return {
      ok: false,
      kid,
      reason: 'invalid-key',
      message: `${label} is not a valid SPKI public key`,
    };
  }
  if (!isP256(key)) {
    return {
      ok: false,
      kid,
      reason: 'unsupported-key',
      message: `${label} is not an EC P-256 key; only EC P-256 keys are trusted`,
    };
  }
  const exported = key.export({ format: 'jwk' });
  if (typeof exported.x !== 'string' || typeof exported.y !== 'string') {
    return {
      ok: false,
      kid,
      reason: 'invalid-key',
      message: `${label} could not be exported as a JWK`,
    };
  }
  return finish(kid, key, meta.data, { x: exported.x, y: exported.y });
}

function finish(
  kid: string,
  key: KeyObject,
  meta: KeyMetadata,
  point: { x: string; y: string },
): KeyImport {
  const jwk: P256PublicJwk = Object.freeze({
    kty: 'EC',
    crv: 'P-256',
    x: point.x,
    y: point.y,
    kid,
    alg: 'ES256',
    use: 'sig',
  });
  const trusted: TrustedKey = Object.freeze({
    kid,
    key,
    jwk,
    thumbprint: ecThumbprint(jwk),
    ...(meta.notBefore === undefined ? {} : { notBefore: meta.notBefore }),
    ...(meta.notAfter === undefined ? {} : { notAfter: meta.notAfter }),
    revoked: meta.revoked ?? false,
  });
  return { ok: true, key: trusted };
}

function withKid(kid: string | undefined, reason: RejectedKeyReason, message: string): KeyImport {
  return kid === undefined ? { ok: false, reason, message } : { ok: false, kid, reason, message };
}

function summarise(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) =>
      issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message,
    )
    .join('; ');
}
