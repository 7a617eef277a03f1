import { closeSync, constants, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { createPublicKey } from 'node:crypto';
import { join, resolve } from 'node:path';
import {
  computePackDigest,
  DIGEST_ALGORITHM,
  DIGEST_EXCLUDED_PATH,
  digestManifest,
  type PackDigestEntry,
} from '@packwarden/pack-digest';
import { isSemver, kidProblem, parseStrictJson } from '@packwarden/pack-manifest/resolve';
import { CompactSign } from 'jose';
import * as z from 'zod';
import { removeStaleTemporaries, writeFileAtomic } from './atomic-write.js';
import {
  PACK_SIGNATURE_ALG,
  PACK_SIGNATURE_IAT_RANGE,
  PACK_SIGNATURE_MAX_BYTES,
  PACK_SIGNATURE_MAX_CLOCK_SKEW_SECONDS,
} from './constants.js';
import { checkEs256Jws, toP256PublicKey } from './es256.js';
import { PackSignatureError } from './errors.js';
import { isKeySelection, type KeySelection, type KeySelector } from './key-selection.js';
import { describePayloadIssues } from './payload.js';
import type {
  PackNoTrustRoot,
  PackTrustRootUnavailable,
  PackUnsigned,
  PackUntrustedKey,
} from './results.js';
import { importSigningKey } from './signing-key.js';
import {
  parsePackToken,
  type MalformedReason,
  type PackSignatureHeader,
  type ParsedPackToken,
} from './strict-jws.js';

/**
 * The signature file at the root of an engine folder (README "Engine signatures"). Distinct from
 * `pack.sig`: an engine folder that holds a `pack.sig` is refused by signer and verifier.
 */
export const ENGINE_SIGNATURE_FILE = 'engine.sig';

/** The Custom Engine V2 manifest an engine folder must hold (`@packwarden/engines`). */
export const ENGINE_MANIFEST_FILE = 'engine.manifest.json';

/** `engine.manifest.json` and `package.json` larger than this are refused unread. */
const ENGINE_METADATA_MAX_BYTES = 64 * 1024;

/** Engine ids (the rule of `@packwarden/engines`' custom-manifest). */
const ENGINE_ID_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;

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

/** What an engine folder says it is: `engine.manifest.json` `id`, `package.json` `version`. */
export interface EngineIdentity {
  id: string;
  /** `package.json` `version`, or `0.0.0` without a `package.json` (the AgentHippo store's rule). */
  version: string;
}

/** Why an engine folder is not an engine that can be signed or verified. */
export type EngineIdentityProblem = { problem: string; code?: string };

function readSmallJson(file: string): unknown {
  const fd = openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw new Error(`${file} is not a regular file`);
    if (info.size > ENGINE_METADATA_MAX_BYTES) {
      throw new Error(`${file} is larger than ${ENGINE_METADATA_MAX_BYTES} bytes`);
    }
    const buffer = Buffer.alloc(info.size + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = readSync(fd, buffer, length, buffer.length - length, length);
      if (n === 0) break;
      length += n;
    }
    if (length > info.size) throw new Error(`${file} grew while it was read`);
    return parseStrictJson(buffer.toString('utf8', 0, length));
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads the identity an engine signature binds: the `id` of `engine.manifest.json` (Custom Engine
 * V2, `version: 2`) and the `version` of `package.json` (`0.0.0` when there is none, as the
 * AgentHippo store's index builder does). Both files are read without following symlinks and
 * bounded to 64 KiB.
 */
export function readEngineIdentity(engineDir: string): EngineIdentity | EngineIdentityProblem {
  let manifest: unknown;
  try {
    manifest = readSmallJson(join(engineDir, ENGINE_MANIFEST_FILE));
  } catch (error) {
    return { problem: `cannot read ${ENGINE_MANIFEST_FILE}: ${(error as Error).message}` };
  }
  const fields = manifest as { version?: unknown; id?: unknown } | null;
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
    return { problem: `${ENGINE_MANIFEST_FILE} is not a JSON object` };
  }
  if (fields.version !== 2) {
    return { problem: `${ENGINE_MANIFEST_FILE} is not a Custom Engine V2 manifest (version 2)` };
  }
  if (typeof fields.id !== 'string' || !ENGINE_ID_PATTERN.test(fields.id)) {
    return { problem: `${ENGINE_MANIFEST_FILE} has no valid engine id` };
  }
  let version = '0.0.0';
  let pkg: unknown;
  try {
    pkg = readSmallJson(join(engineDir, 'package.json'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      return { problem: `cannot read package.json: ${(error as Error).message}` };
    }
  }
  if (pkg !== undefined) {
    const declared = (pkg as { version?: unknown } | null)?.version;
    if (typeof declared !== 'string' || declared.length > 256 || !isSemver(declared)) {
      return { problem: 'package.json has no semantic version in "version"' };
    }
    version = declared;
  }
  return { id: fields.id, version };
}

function hasRootPackSignature(engineDir: string): boolean {
  try {
    statSync(join(engineDir, DIGEST_EXCLUDED_PATH), { throwIfNoEntry: true });
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

/**
 * Engine digest: Pack digest v1 (`packwarden-digest/1`) of the folder, with the root
 * `engine.sig` left out as the root `pack.sig` is for packs. The digest walk itself leaves out a
 * root `pack.sig`; signer and verifier refuse a folder that has one, so every file of a signed
 * engine but `engine.sig` is covered.
 */
async function engineDigest(
  engineDir: string,
  signal: AbortSignal | undefined,
): Promise<{ digest: string; entries: PackDigestEntry[] }> {
  const all = await computePackDigest(engineDir, signal ? { signal } : {});
  const entries = all.entries.filter((entry) => entry.path !== ENGINE_SIGNATURE_FILE);
  return { digest: digestManifest(entries), entries };
}

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

/**
 * Signs the engine in `engineDir`: reads its identity ({@link readEngineIdentity}), computes the
 * engine digest and signs `{engine, engineVersion, digest, digestAlg, iat}` with ES256 (same key
 * kinds and trust roots as `pack.sig`). By default writes `<engineDir>/engine.sig` atomically.
 */
export async function signEngine(
  engineDir: string,
  options: SignEngineOptions,
): Promise<SignedEngine> {
  if (typeof engineDir !== 'string' || engineDir === '') {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      'signEngine: engineDir must be a non-empty string.',
    );
  }
  if (typeof options !== 'object' || options === null) {
    throw new PackSignatureError('ERR_INVALID_ARGUMENT', 'signEngine: options must be an object.');
  }
  const problem = kidProblem(options.kid);
  if (problem !== undefined) {
    throw new PackSignatureError('ERR_INVALID_KID', `signEngine: ${problem}.`);
  }
  const now = options.now ?? new Date();
  if (!(now instanceof Date) || Number.isNaN(now.getTime())) {
    throw new PackSignatureError('ERR_INVALID_ARGUMENT', 'signEngine: now must be a valid Date.');
  }
  const iat = Math.floor(now.getTime() / 1000);
  if (iat < PACK_SIGNATURE_IAT_RANGE.min || iat > PACK_SIGNATURE_IAT_RANGE.max) {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      'signEngine: now must lie between 2000-01-01 and 2100-01-01; verifiers refuse any other iat.',
    );
  }
  const write = options.write ?? true;
  const privateKey = importSigningKey(options.privateKeyPem);
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
  if (write) {
    const busy = await removeStaleTemporaries(engineDir, ENGINE_SIGNATURE_FILE).catch(() => []);
    if (busy.length > 0) {
      throw new PackSignatureError(
        'ERR_SIGNING_IN_PROGRESS',
        `another process is signing ${engineDir} right now (${busy.join(', ')}); try again when it is done`,
      );
    }
  }
  let digested;
  try {
    digested = await engineDigest(engineDir, options.signal);
  } catch (cause) {
    if ((cause as { code?: string }).code === 'ERR_DIGEST_ABORTED') {
      throw new PackSignatureError('ERR_ABORTED', 'signEngine was aborted.', { cause });
    }
    throw new PackSignatureError(
      'ERR_PACK_UNREADABLE',
      `cannot digest ${engineDir}: ${(cause as Error).message}`,
      { cause },
    );
  }
  const payload: EngineSignaturePayload = {
    engine: identity.id,
    engineVersion: identity.version,
    digest: digested.digest,
    digestAlg: DIGEST_ALGORITHM,
    iat,
  };
  const header = { alg: PACK_SIGNATURE_ALG, typ: 'JWT', kid: options.kid } as const;
  const token = await new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ ...header })
    .sign(privateKey);
  // What a signer writes must pass its own verifier's checks.
  const parsed = parsePackToken(token);
  if (
    !parsed.ok ||
    !EngineSignaturePayloadSchema.safeParse(parsed.value.payload).success ||
    !(await checkEs256Jws(parsed.value, createPublicKey(privateKey)))
  ) {
    throw new PackSignatureError('ERR_INTERNAL', 'signEngine produced a token it refuses.');
  }
  const file = join(resolve(engineDir), ENGINE_SIGNATURE_FILE);
  if (write) {
    try {
      await writeFileAtomic(file, `${token}\n`, 0o644);
    } catch (cause) {
      throw new PackSignatureError(
        'ERR_SIGNATURE_WRITE',
        `cannot write ${file}: ${(cause as Error).message}`,
        { cause },
      );
    }
  }
  return {
    token,
    header,
    payload,
    digest: digested.digest,
    file,
    written: write,
    entryCount: digested.entries.length,
  };
}

/** What a genuine engine signature by a trusted key says. */
export interface EngineSignatureClaims {
  engine: string;
  engineVersion: string;
  digest: string;
  iat: Date;
  kid: string;
  thumbprint?: string;
}

/** Trusted key at `iat`, valid signature, identity and digest match. The only pass. */
export interface EngineVerified extends EngineSignatureClaims {
  kind: 'verified';
  digestAlg: typeof DIGEST_ALGORITHM;
  message: string;
}

/** Why an engine is `invalid`. */
export type EngineInvalidReason =
  /** `engine.sig` fails the strict pre-parser of `pack.sig` (see `malformed`). */
  | 'malformed'
  /** The ES256 signature does not verify with the trusted key. */
  | 'bad-signature'
  /** The signed payload is not an `engine.sig` v1 payload (a `pack.sig` payload among them). */
  | 'payload-invalid'
  /** The signed `iat` lies more than 5 minutes after the verifier's clock. */
  | 'issued-in-future'
  /** `engine.manifest.json` or `package.json` is missing or invalid. */
  | 'engine-invalid'
  /** The folder holds a root `pack.sig`, which the engine digest cannot cover. */
  | 'holds-pack-signature'
  /** `engine` / `engineVersion` differ from the manifest's `id` / `package.json` `version`. */
  | 'identity-mismatch'
  /** The folder's content no longer has the signed digest. */
  | 'digest-mismatch'
  /** The folder or its content cannot be read or digested. */
  | 'engine-unreadable';

export interface EngineInvalid {
  kind: 'invalid';
  reason: EngineInvalidReason;
  message: string;
  malformed?: MalformedReason;
  kid?: string;
  engine?: string;
  engineVersion?: string;
  digest?: string;
  iat?: Date;
  thumbprint?: string;
  /** `identity-mismatch`: what the folder says. */
  found?: EngineIdentity;
  /** `digest-mismatch`: the digest of the content as it is now. */
  actualDigest?: string;
  code?: string;
}

/** The outcome of `verifyEngine`: the kinds of `verifyPack` but `digest-unsupported`. */
export type EngineVerification =
  | EngineVerified
  | EngineInvalid
  | PackUnsigned
  | PackUntrustedKey
  | PackNoTrustRoot
  | PackTrustRootUnavailable;

export interface VerifyEngineOptions {
  /** Picks the trusted key for the token's `kid` at its `iat`. Required. */
  selectKey: KeySelector;
  /** The engine id the caller expects (e.g. the pack's `spec.engine`); another id is invalid. */
  expectedId?: string;
  signal?: AbortSignal;
  /** The verifier's clock. Default `() => new Date()`. */
  now?: () => Date;
}

type ReadToken =
  | { kind: 'absent' }
  | { kind: 'present'; parsed: ParsedPackToken }
  | { kind: 'malformed'; reason: MalformedReason; message: string };

// The bounded read of read-signature.ts, for engine.sig: never follows a symlink, refuses a
// larger file from its size, reads at most one byte past what fstat said.
function readEngineToken(engineDir: string): ReadToken {
  const file = join(engineDir, ENGINE_SIGNATURE_FILE);
  let fd: number;
  try {
    fd = openSync(
      file,
      constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0),
    );
  } catch (cause) {
    const code = (cause as { code?: string }).code;
    if (code === 'ENOENT') return { kind: 'absent' };
    if (code === 'ELOOP') {
      return { kind: 'malformed', reason: 'not-regular-file', message: 'engine.sig is a symlink' };
    }
    throw new PackSignatureError(
      'ERR_SIGNATURE_UNREADABLE',
      `cannot open ${file}: ${(cause as Error).message}`,
      { cause },
    );
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) {
      return {
        kind: 'malformed',
        reason: 'not-regular-file',
        message: 'engine.sig is not a regular file',
      };
    }
    if (stats.size > PACK_SIGNATURE_MAX_BYTES) {
      return { kind: 'malformed', reason: 'too-large', message: 'engine.sig is too large' };
    }
    const buffer = Buffer.allocUnsafe(stats.size + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = readSync(fd, buffer, length, buffer.length - length, length);
      if (n === 0) break;
      length += n;
    }
    if (length > stats.size) {
      return { kind: 'malformed', reason: 'too-large', message: 'engine.sig grew while read' };
    }
    const parsed = parsePackToken(buffer.toString('latin1', 0, length));
    if (!parsed.ok) return { kind: 'malformed', reason: parsed.reason, message: parsed.message };
    return { kind: 'present', parsed: parsed.value };
  } catch (cause) {
    throw new PackSignatureError(
      'ERR_SIGNATURE_UNREADABLE',
      `cannot read ${file}: ${(cause as Error).message}`,
      { cause },
    );
  } finally {
    closeSync(fd);
  }
}

function invalid(
  reason: EngineInvalidReason,
  message: string,
  extra: Omit<Partial<EngineInvalid>, 'kind' | 'reason' | 'message'> = {},
): EngineInvalid {
  return { kind: 'invalid', reason, message, ...extra };
}

/**
 * Verifies the `engine.sig` of the engine in `engineDir`, in the order of `verifyPack` (nothing in
 * the payload is trusted before the signature verified): pre-parse, key selection at `iat`,
 * ES256 signature, `engine.sig` payload schema, `iat` not in the future, identity against
 * `engine.manifest.json` / `package.json` (and `expectedId`), content digest. Caller errors
 * reject with `PackSignatureError` as in `verifyPack`.
 */
export async function verifyEngine(
  engineDir: string,
  options: VerifyEngineOptions,
): Promise<EngineVerification> {
  if (typeof options !== 'object' || options === null || typeof options.selectKey !== 'function') {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      'verifyEngine: options.selectKey must be a function.',
    );
  }
  if (typeof engineDir !== 'string' || engineDir === '') {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      'verifyEngine: engineDir must be a non-empty string.',
    );
  }
  const now = options.now ?? ((): Date => new Date());
  if (options.signal?.aborted) {
    throw new PackSignatureError('ERR_ABORTED', 'verifyEngine was aborted.');
  }
  try {
    if (!statSync(engineDir).isDirectory()) {
      return invalid('engine-unreadable', `${engineDir} is not a folder`);
    }
  } catch (error) {
    return invalid(
      'engine-unreadable',
      `cannot read the engine folder ${engineDir}: ${(error as NodeJS.ErrnoException).code ?? ''}`,
    );
  }
  const read = readEngineToken(engineDir);
  if (read.kind === 'absent') {
    return {
      kind: 'unsigned',
      message: `${engineDir} has no engine.sig: the engine is not signed.`,
    };
  }
  if (read.kind === 'malformed') {
    return invalid('malformed', `engine.sig is malformed: ${read.message}.`, {
      malformed: read.reason,
    });
  }
  const token = read.parsed;
  const kid = token.header.kid;
  const at = new Date(token.iat * 1000);
  let selection: unknown;
  try {
    selection = await options.selectKey(kid, at);
  } catch (cause) {
    throw new PackSignatureError(
      'ERR_KEY_SELECTOR',
      `verifyEngine: selectKey threw for kid "${kid}": ${(cause as Error)?.message ?? String(cause)}`,
      { cause },
    );
  }
  if (!isKeySelection(selection)) {
    throw new PackSignatureError(
      'ERR_KEY_SELECTOR',
      'verifyEngine: selectKey must return a KeySelection.',
    );
  }
  const chosen: KeySelection = selection;
  switch (chosen.kind) {
    case 'no-trust-root':
      return { kind: 'no-trust-root', message: chosen.message };
    case 'trust-root-unavailable':
      return {
        kind: 'trust-root-unavailable',
        reason: chosen.reason,
        retryable: chosen.retryable ?? false,
        ...(chosen.code === undefined ? {} : { code: chosen.code }),
        message: `the trust root is unavailable: ${chosen.reason}`,
      };
    case 'untrusted-key':
      return {
        kind: 'untrusted-key',
        kid,
        reason: chosen.reason,
        message: `engine.sig is signed by key "${kid}", which is not trusted: ${chosen.message}`,
      };
    case 'ok':
      break;
  }
  if (chosen.key.kid !== kid) {
    throw new PackSignatureError(
      'ERR_KEY_SELECTOR',
      `verifyEngine: selectKey was asked for kid "${kid}" and answered with key "${chosen.key.kid}".`,
    );
  }
  const key = toP256PublicKey(chosen.key.key);
  if (!key.ok) {
    throw new PackSignatureError(
      'ERR_VERIFICATION_KEY_INVALID',
      `verifyEngine: the key selected for "${kid}" is ${key.problem}.`,
    );
  }
  const thumbprint = chosen.key.thumbprint;
  const signer = { kid, ...(thumbprint === undefined ? {} : { thumbprint }) };
  if (!(await checkEs256Jws(token, key.key))) {
    return invalid(
      'bad-signature',
      `the signature of engine.sig does not verify with the trusted key "${kid}".`,
      signer,
    );
  }
  // From here on the payload is authentic.
  const checked = EngineSignaturePayloadSchema.safeParse(token.payload);
  if (!checked.success) {
    return invalid(
      'payload-invalid',
      `the signed payload is not an engine.sig v1 payload: ${describePayloadIssues(checked.error)}.`,
      signer,
    );
  }
  const payload = checked.data;
  const claims = {
    engine: payload.engine,
    engineVersion: payload.engineVersion,
    digest: payload.digest,
    iat: at,
    ...signer,
  };
  const nowMs = now().getTime();
  if (!Number.isFinite(nowMs)) {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      'verifyEngine: options.now must return a valid Date.',
    );
  }
  if (payload.iat > Math.floor(nowMs / 1000) + PACK_SIGNATURE_MAX_CLOCK_SKEW_SECONDS) {
    return invalid(
      'issued-in-future',
      `engine.sig says it was signed at ${at.toISOString()}, after this verifier's clock.`,
      claims,
    );
  }
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
  if (options.expectedId !== undefined && payload.engine !== options.expectedId) {
    return invalid(
      'identity-mismatch',
      `engine.sig signs the engine ${JSON.stringify(payload.engine)}, not ${JSON.stringify(options.expectedId)}.`,
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
  let actual;
  try {
    actual = await engineDigest(engineDir, options.signal);
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_DIGEST_ABORTED') {
      throw new PackSignatureError('ERR_ABORTED', 'verifyEngine was aborted.', { cause: error });
    }
    const code = (error as { code?: unknown }).code;
    return invalid(
      'engine-unreadable',
      `cannot digest the engine's content: ${(error as Error).message}`,
      { ...claims, ...(typeof code === 'string' ? { code } : {}) },
    );
  }
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
    message: `verified: engine ${payload.engine}@${payload.engineVersion} signed by "${kid}" at ${at.toISOString()}, content unchanged.`,
  };
}
