import { statSync, type Stats } from 'node:fs';
import type { PackDigestEntry } from '@packwarden/pack-digest';
import type * as z from 'zod';
import { PACK_SIGNATURE_MAX_CLOCK_SKEW_SECONDS } from './constants.js';
import { checkEs256Direct, confirmEs256WithJose, toP256PublicKey } from './es256.js';
import { PackSignatureError } from './errors.js';
import { digestSignedFolder, throwIfAborted } from './folder-digest.js';
import { isKeySelection, type KeySelection, type KeySelector } from './key-selection.js';
import { describePayloadIssues } from './payload.js';
import { readSignatureToken } from './read-signature.js';
import type {
  PackNoTrustRoot,
  PackTrustRootUnavailable,
  PackUnsigned,
  PackUntrustedKey,
} from './results.js';
import type { MalformedReason } from './strict-jws.js';

/**
 * The steps `verifyPack` and `verifyEngine` share (README "verifyPack", steps 1 to 7, and
 * "Engine signatures"), up to an authentic, timely payload. What differs between `pack.sig` and
 * `engine.sig` is only what this describes.
 */
export interface SignedFolderKind<S extends SignedPayloadSchema, I, U extends string> {
  /** The public function, at the head of every thrown message: `verifyPack`. */
  caller: string;
  /** What the folder holds, in messages: `pack`. */
  subject: string;
  /** The signature file at the folder's root: `pack.sig`. */
  file: string;
  /** The `invalid` reason for a folder, signature file or content that cannot be read. */
  unreadable: U;
  /** The strict payload schema, checked only after the signature verified. */
  schema: S;
  /** The signed identity, first in the claims: `{ pack, packVersion }`. */
  identity(payload: z.output<S>): I;
}

/** A strict payload schema: every signed payload has a content `digest` and an `iat`. */
export type SignedPayloadSchema = z.ZodType<{ digest: string; iat: number }>;

export interface VerifyFolderOptions {
  selectKey: KeySelector;
  signal?: AbortSignal | undefined;
  now?: (() => Date) | undefined;
}

export interface ResolvedVerifyOptions {
  selectKey: KeySelector;
  signal: AbortSignal | undefined;
  now: () => Date;
}

/** What a genuine, timely signature says: the identity, then digest, `iat`, and the key. */
export type SignedClaims<I> = I & { digest: string; iat: Date; kid: string; thumbprint?: string };

type InvalidExtra<I> = Partial<SignedClaims<I>> & { malformed?: MalformedReason; code?: string };

/** The `invalid` results of the shared steps; `PackInvalid` and `EngineInvalid` admit them. */
export type SharedInvalid<I, U extends string> = {
  kind: 'invalid';
  reason: SharedInvalidReason<U>;
  message: string;
} & InvalidExtra<I>;

type SharedInvalidReason<U extends string> =
  'malformed' | 'bad-signature' | 'payload-invalid' | 'issued-in-future' | U;

function sharedInvalid<I, U extends string>(
  reason: SharedInvalidReason<U>,
  message: string,
  extra?: InvalidExtra<unknown> | SignedClaims<I>,
): SharedInvalid<I, U> {
  return { kind: 'invalid', reason, message, ...extra } as unknown as SharedInvalid<I, U>;
}

export type SharedRefusal<I, U extends string> =
  | SharedInvalid<I, U>
  | PackUnsigned
  | PackUntrustedKey
  | PackNoTrustRoot
  | PackTrustRootUnavailable;

export type CheckedSignature<S extends SignedPayloadSchema, I, U extends string> =
  | { kind: 'authentic'; payload: z.output<S>; claims: SignedClaims<I>; settle: Settle<I, U> }
  | SharedRefusal<I, U>;

/**
 * Waits for the second signature check (jose), still running when `checkFolderSignature`
 * returns, and gives `result` only when it accepted; `bad-signature` when it refused, whatever
 * `result` says (and whatever `result` threw). Every result after the signature check passes
 * through it, so callers answer exactly as if jose had been awaited before the payload was read.
 */
export type Settle<I, U extends string> = <R>(
  result: R | Promise<R>,
) => Promise<R | SharedInvalid<I, U>>;

/** Builds an `invalid` result of type `R` (`PackInvalid`, `EngineInvalid`). */
export function invalidResult<R extends { kind: 'invalid'; reason: string; message: string }>(
  reason: R['reason'],
  message: string,
  extra?: Omit<Partial<R>, 'kind' | 'reason' | 'message'>,
): R {
  return { kind: 'invalid', reason, message, ...extra } as R;
}

export function codeOf(error: unknown): { code?: string } {
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' ? { code } : {};
}

export function resolveVerifyOptions(
  options: VerifyFolderOptions,
  caller: string,
): ResolvedVerifyOptions {
  if (typeof options !== 'object' || options === null || typeof options.selectKey !== 'function') {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      `${caller}: options.selectKey must be a function, e.g. (kid, at) => selectTrustedKey(root, kid, { at }).`,
    );
  }
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      `${caller}: options.signal must be an AbortSignal.`,
    );
  }
  if (options.now !== undefined && typeof options.now !== 'function') {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      `${caller}: options.now must be a function returning a Date.`,
    );
  }
  return {
    selectKey: options.selectKey,
    signal: options.signal,
    now: options.now ?? ((): Date => new Date()),
  };
}

/**
 * The folder is readable, its signature file present and accepted by the strict pre-parser, the
 * key selector trusts the `kid` at `iat`, the ES256 signature verifies with exactly that key
 * (Node and jose both), the now-authentic payload follows `kind.schema`, and its `iat` is at most
 * `PACK_SIGNATURE_MAX_CLOCK_SKEW_SECONDS` after `now()`. Nothing in the payload is believed
 * before the signature verified. Throws only the caller errors of README "verifyPack".
 *
 * jose may still be checking when this resolves `authentic`: the caller passes its own result
 * through `settle`, which waits for jose and answers `bad-signature` if it refused.
 */
async function checkFolderSignature<S extends SignedPayloadSchema, I, U extends string>(
  dir: string,
  options: ResolvedVerifyOptions,
  kind: SignedFolderKind<S, I, U>,
): Promise<CheckedSignature<S, I, U>> {
  const { caller, subject, file } = kind;
  const invalid = sharedInvalid<I, U>;
  if (typeof dir !== 'string' || dir === '') {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      `${caller}: ${subject}Dir must be a non-empty string.`,
    );
  }
  throwIfAborted(options.signal, caller);

  // statSync: a few microseconds, where the thread pool's round trip costs more (issue 14).
  let folder: Stats | NodeJS.ErrnoException;
  try {
    folder = statSync(dir);
  } catch (error) {
    folder = error as NodeJS.ErrnoException;
  }
  if (folder instanceof Error || !folder.isDirectory()) {
    return invalid(
      kind.unreadable,
      folder instanceof Error
        ? `cannot read the ${subject} folder ${dir}: ${folder.code ?? folder.message}`
        : `${dir} is not a folder`,
      folder instanceof Error && folder.code ? { code: folder.code } : {},
    );
  }

  let read;
  try {
    read = readSignatureToken(dir, file);
  } catch (error) {
    if (error instanceof PackSignatureError && error.code === 'ERR_SIGNATURE_UNREADABLE') {
      return invalid(kind.unreadable, error.message, { code: error.code });
    }
    throw error;
  }
  if (read.kind === 'absent') {
    return { kind: 'unsigned', message: `${dir} has no ${file}: the ${subject} is not signed.` };
  }
  if (read.kind === 'malformed') {
    return invalid('malformed', `${file} is malformed: ${read.message}.`, {
      malformed: read.reason,
    });
  }
  const token = read.parsed;
  const kid = token.header.kid;
  const at = new Date(token.iat * 1000);

  const selection = await callSelector(options.selectKey, kid, at, caller);
  switch (selection.kind) {
    case 'no-trust-root':
      return { kind: 'no-trust-root', message: selection.message };
    case 'trust-root-unavailable':
      return {
        kind: 'trust-root-unavailable',
        reason: selection.reason,
        retryable: selection.retryable ?? false,
        ...(selection.code === undefined ? {} : { code: selection.code }),
        message: `the trust root is unavailable: ${selection.reason}`,
      };
    case 'untrusted-key':
      return {
        kind: 'untrusted-key',
        kid,
        reason: selection.reason,
        message: `${file} is signed by key "${kid}", which is not trusted: ${selection.message}`,
      };
    case 'ok':
      break;
  }
  if (selection.key.kid !== kid) {
    throw new PackSignatureError(
      'ERR_KEY_SELECTOR',
      `${caller}: selectKey was asked for kid "${kid}" and answered with key "${selection.key.kid}".`,
    );
  }
  const key = toP256PublicKey(selection.key.key);
  if (!key.ok) {
    throw new PackSignatureError(
      'ERR_VERIFICATION_KEY_INVALID',
      `${caller}: the key selected for "${kid}" is ${key.problem}; ${file} v1 is verified with EC P-256 public keys.`,
    );
  }
  const thumbprint = selection.key.thumbprint;
  const signer = { kid, ...(thumbprint === undefined ? {} : { thumbprint }) };

  const badSignature = (): SharedInvalid<I, U> =>
    invalid(
      'bad-signature',
      `the signature of ${file} does not verify with the trusted key "${kid}": the token was altered or signed by another key.`,
      signer,
    );
  if (!checkEs256Direct(token, key.key)) return badSignature();
  // jose's check runs on the thread pool while the steps below and the caller's digest go on
  // (issue 14: a warm verifyPack sat idle ~0.35 ms waiting for it); `settle` makes every later
  // result wait for it, and its refusal wins, as when it was awaited here.
  const confirmation = confirmEs256WithJose(token, key.key);
  const settle: Settle<I, U> = async (result) => {
    let settled: Awaited<typeof result>;
    try {
      settled = await result;
    } catch (error) {
      if (!(await confirmation)) return badSignature();
      throw error;
    }
    return (await confirmation) ? settled : badSignature();
  };

  let judged: ReturnType<typeof judgePayload<S, I, U>>;
  try {
    judged = judgePayload(token.payload, at, signer, options, kind);
  } catch (error) {
    return settle(Promise.reject(error));
  }
  return judged.kind === 'authentic' ? { ...judged, settle } : settle(judged);
}

/**
 * The steps after the signature check, on a payload that is now authentic (it is what the key
 * holder signed): the payload schema, then `iat` at most the allowed skew after `now()`.
 */
function judgePayload<S extends SignedPayloadSchema, I, U extends string>(
  unchecked: Record<string, unknown>,
  at: Date,
  signer: { kid: string; thumbprint?: string },
  options: ResolvedVerifyOptions,
  kind: SignedFolderKind<S, I, U>,
): { kind: 'authentic'; payload: z.output<S>; claims: SignedClaims<I> } | SharedInvalid<I, U> {
  const { caller, file } = kind;
  const invalid = sharedInvalid<I, U>;
  const checked = kind.schema.safeParse(unchecked);
  if (!checked.success) {
    return invalid(
      'payload-invalid',
      `the signed payload is not a valid ${file} v1 payload: ${describePayloadIssues(checked.error)}.`,
      signer,
    );
  }
  const payload = checked.data;
  const claims: SignedClaims<I> = {
    ...kind.identity(payload),
    digest: payload.digest,
    iat: at,
    ...signer,
  };
  const nowMs = options.now().getTime();
  if (!Number.isFinite(nowMs)) {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      `${caller}: options.now must return a valid Date.`,
    );
  }
  if (payload.iat > Math.floor(nowMs / 1000) + PACK_SIGNATURE_MAX_CLOCK_SKEW_SECONDS) {
    // README "verifyPack": a signature from the future is refused, whatever key made it.
    return invalid(
      'issued-in-future',
      `${file} says it was signed at ${at.toISOString()}, more than ${PACK_SIGNATURE_MAX_CLOCK_SKEW_SECONDS / 60} minutes after this verifier's clock (${new Date(nowMs).toISOString()}): a crafted or misdated signature is refused.`,
      claims,
    );
  }
  return { kind: 'authentic', payload, claims };
}

/**
 * Verifies a signed folder of `kind`: the shared steps (`checkFolderSignature`), then, on an
 * authentic payload, the caller's own `checkContent`, whose answer passes through `settle`. The
 * one way the verifiers reach `checkFolderSignature`, so that none can forget to wait for jose.
 */
export async function verifySignedFolder<S extends SignedPayloadSchema, I, U extends string, R>(
  dir: string,
  options: VerifyFolderOptions,
  kind: SignedFolderKind<S, I, U>,
  checkContent: (
    payload: z.output<S>,
    claims: SignedClaims<I>,
    resolved: ResolvedVerifyOptions,
  ) => Promise<R>,
): Promise<R | SharedRefusal<I, U>> {
  const resolved = resolveVerifyOptions(options, kind.caller);
  const checked = await checkFolderSignature(dir, resolved, kind);
  if (checked.kind !== 'authentic') return checked;
  return checked.settle(checkContent(checked.payload, checked.claims, resolved));
}

/**
 * The digest of the folder's content now (`digestSignedFolder`), or the `invalid` result for
 * content that cannot be digested. Rejects with `ERR_ABORTED` on abort.
 */
export async function digestOrRefusal<S extends SignedPayloadSchema, I, U extends string>(
  dir: string,
  options: ResolvedVerifyOptions,
  kind: SignedFolderKind<S, I, U>,
  claims: SignedClaims<I>,
): Promise<
  | { ok: true; digest: string; entries: PackDigestEntry[] }
  | { ok: false; refusal: SharedInvalid<I, U> }
> {
  const actual = await digestSignedFolder(dir, kind.file, options.signal, kind.caller);
  if (actual.ok) return actual;
  return {
    ok: false,
    refusal: sharedInvalid<I, U>(
      kind.unreadable,
      `cannot digest the ${kind.subject}'s content: ${(actual.error as Error).message}`,
      { ...claims, ...codeOf(actual.error) },
    ),
  };
}

async function callSelector(
  selectKey: KeySelector,
  kid: string,
  at: Date,
  caller: string,
): Promise<KeySelection> {
  let selection: unknown;
  try {
    selection = await selectKey(kid, at);
  } catch (cause) {
    throw new PackSignatureError(
      'ERR_KEY_SELECTOR',
      `${caller}: selectKey threw for kid "${kid}": ${(cause as Error)?.message ?? String(cause)}`,
      { cause },
    );
  }
  if (!isKeySelection(selection)) {
    throw new PackSignatureError(
      'ERR_KEY_SELECTOR',
      `${caller}: selectKey must return a KeySelection ({ kind: "ok", key } or a refusal).`,
    );
  }
  return selection;
}
