import { DIGEST_ALGORITHM } from '@packwarden/pack-digest';
import { isSemver } from '@packwarden/pack-manifest/resolve';
import * as z from 'zod';
import { PACK_SIGNATURE_IAT_RANGE } from './constants.js';
import { PackSignatureError } from './errors.js';
import { ENGINE_ID_PATTERN, hasRootPackSignature, readEngineIdentity } from './engine-identity.js';
import type { KeySelector } from './key-selection.js';
import type { EngineInvalid, EngineSignatureClaims, EngineVerification } from './results.js';
import {
  checkAndWriteSignature,
  clearStaleSignatures,
  digestToSign,
  resolveSigning,
  signPayload,
  type SigningKind,
} from './sign-folder.js';
import type { PackSignatureHeader } from './strict-jws.js';
import {
  digestOrRefusal,
  invalidResult,
  type ResolvedVerifyOptions,
  type SignedFolderKind,
  verifySignedFolder,
} from './verify-folder.js';

/**
 * The signature file at the root of an engine folder (README "Engine signatures"). Distinct from
 * `pack.sig`: an engine folder that holds a `pack.sig` is refused by signer and verifier.
 */
export const ENGINE_SIGNATURE_FILE = 'engine.sig';

/**
 * The signed payload of `engine.sig` v1. Strict, and disjoint from the `pack.sig` payload: it
 * requires `engine` and `engineVersion` where a pack payload requires `pack` and `packVersion`,
 * and neither schema admits the other's members, so neither token verifies as the other.
 */
export const EngineSignaturePayloadSchema = z.strictObject({
  engine: z.string().regex(ENGINE_ID_PATTERN, 'must be an engine id'),
  engineVersion: z.string().max(256).refine(isSemver, 'must be a semantic version'),
  digest: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex characters'),
  digestAlg: z.literal(DIGEST_ALGORITHM),
  iat: z
    .number()
    .int()
    .min(PACK_SIGNATURE_IAT_RANGE.min, 'is before 2000-01-01')
    .max(PACK_SIGNATURE_IAT_RANGE.max, 'is after 2100-01-01'),
});

export type EngineSignaturePayload = z.infer<typeof EngineSignaturePayloadSchema>;

export interface SignEngineOptions {
  /** The ES256 private key, PKCS#8 PEM (as written by `generateKeypair`). Required. */
  privateKeyPem: string;
  /** The key's id, as the verifiers' trust root knows it. Required. */
  kid: string;
  /** The signing time (`iat`). Default: now. */
  now?: Date;
  /** Write `<engineDir>/engine.sig` (atomically, mode 0644). Default `true`. */
  write?: boolean;
  signal?: AbortSignal;
}

export interface SignedEngine {
  /** The compact JWS; `engine.sig` holds it followed by `\n`. */
  token: string;
  header: PackSignatureHeader & { typ: 'JWT' };
  payload: EngineSignaturePayload;
  digest: string;
  /** Absolute path of `engine.sig` (written only when `write` is true). */
  file: string;
  written: boolean;
  /** Files and symlinks signed. */
  entryCount: number;
}

const ENGINE_SIGNING: SigningKind = {
  caller: 'signEngine',
  subject: 'engine',
  file: ENGINE_SIGNATURE_FILE,
  schema: EngineSignaturePayloadSchema,
};

/**
 * Signs the engine in `engineDir`: reads its identity ({@link readEngineIdentity}), computes the
 * engine digest and signs `{engine, engineVersion, digest, digestAlg, iat}` with ES256 (same key
 * kinds and trust roots as `pack.sig`). By default writes `<engineDir>/engine.sig` atomically.
 */
export async function signEngine(
  engineDir: string,
  options: SignEngineOptions,
): Promise<SignedEngine> {
  const signing = resolveSigning(engineDir, options, ENGINE_SIGNING);
  const identity = readEngineIdentity(engineDir);
  if ('problem' in identity) {
    throw new PackSignatureError(
      'ERR_ENGINE_INVALID',
      `cannot sign ${engineDir} as an engine: ${identity.problem}`,
    );
  }
  if (hasRootPackSignature(engineDir)) {
    throw new PackSignatureError(
      'ERR_ENGINE_HOLDS_PACK_SIGNATURE',
      `cannot sign ${engineDir} as an engine: it holds a pack.sig, which an engine digest cannot cover; remove it`,
    );
  }
  await clearStaleSignatures(engineDir, signing, ENGINE_SIGNING);
  const digested = await digestToSign(engineDir, signing, ENGINE_SIGNING);
  const payload: EngineSignaturePayload = {
    engine: identity.id,
    engineVersion: identity.version,
    digest: digested.digest,
    digestAlg: DIGEST_ALGORITHM,
    iat: signing.iat,
  };
  const token = await signPayload(payload, signing);
  const file = await checkAndWriteSignature(engineDir, token, signing, ENGINE_SIGNING);
  return {
    token,
    header: signing.header,
    payload,
    digest: digested.digest,
    file,
    written: signing.write,
    entryCount: digested.entries.length,
  };
}

export interface VerifyEngineOptions {
  /** Picks the trusted key for the token's `kid` at its `iat`. Required. */
  selectKey: KeySelector;
  /** The engine id the caller expects (e.g. the pack's `spec.engine`); another id is invalid. */
  expectedId?: string;
  signal?: AbortSignal;
  /** The verifier's clock. Default `() => new Date()`. */
  now?: () => Date;
}

/** `engine.sig` for the steps it shares with `pack.sig` (`verify-folder.ts`). */
const ENGINE_SIGNATURE: SignedFolderKind<
  typeof EngineSignaturePayloadSchema,
  Pick<EngineSignatureClaims, 'engine' | 'engineVersion'>,
  'engine-unreadable'
> = {
  caller: 'verifyEngine',
  subject: 'engine',
  file: ENGINE_SIGNATURE_FILE,
  unreadable: 'engine-unreadable',
  schema: EngineSignaturePayloadSchema,
  identity: (payload) => ({ engine: payload.engine, engineVersion: payload.engineVersion }),
};

const invalid = invalidResult<EngineInvalid>;

/**
 * Verifies the `engine.sig` of the engine in `engineDir`, in the order of `verifyPack` (nothing in
 * the payload is trusted before the signature verified): pre-parse, key selection at `iat`,
 * ES256 signature, `engine.sig` payload schema, `iat` not in the future, identity against
 * `engine.manifest.json` / `package.json` (and `expectedId`), no root `pack.sig`, content digest.
 * Caller errors reject with `PackSignatureError` as in `verifyPack`.
 */
export async function verifyEngine(
  engineDir: string,
  options: VerifyEngineOptions,
): Promise<EngineVerification> {
  return verifySignedFolder(engineDir, options, ENGINE_SIGNATURE, (payload, claims, resolved) =>
    checkEngineContent(engineDir, resolved, options.expectedId, payload, claims),
  );
}

/** The steps after an authentic payload: identity, no root `pack.sig`, content digest. */
async function checkEngineContent(
  engineDir: string,
  resolved: ResolvedVerifyOptions,
  expectedId: string | undefined,
  payload: z.output<typeof EngineSignaturePayloadSchema>,
  claims: EngineSignatureClaims,
): Promise<EngineVerification> {
  const identity = readEngineIdentity(engineDir);
  if ('problem' in identity) {
    return invalid('engine-invalid', `the engine folder is not valid: ${identity.problem}`, claims);
  }
  if (payload.engine !== identity.id || payload.engineVersion !== identity.version) {
    return invalid(
      'identity-mismatch',
      `engine.sig signs ${JSON.stringify(`${payload.engine}@${payload.engineVersion}`)} but the folder holds ${JSON.stringify(`${identity.id}@${identity.version}`)}.`,
      { ...claims, found: identity },
    );
  }
  if (expectedId !== undefined && payload.engine !== expectedId) {
    return invalid(
      'identity-mismatch',
      `engine.sig signs the engine ${JSON.stringify(payload.engine)}, not ${JSON.stringify(expectedId)}.`,
      { ...claims, found: identity },
    );
  }
  if (hasRootPackSignature(engineDir)) {
    return invalid(
      'holds-pack-signature',
      'the engine folder holds a pack.sig, which no engine signature covers: refused.',
      claims,
    );
  }
  const actual = await digestOrRefusal(engineDir, resolved, ENGINE_SIGNATURE, claims);
  if (!actual.ok) return actual.refusal;
  if (actual.digest !== payload.digest) {
    return invalid('digest-mismatch', `the engine's content changed after it was signed.`, {
      ...claims,
      actualDigest: actual.digest,
    });
  }
  return {
    kind: 'verified',
    ...claims,
    digestAlg: DIGEST_ALGORITHM,
    message: `verified: engine ${payload.engine}@${payload.engineVersion} signed by "${claims.kid}" at ${claims.iat.toISOString()}, content unchanged.`,
  };
}
