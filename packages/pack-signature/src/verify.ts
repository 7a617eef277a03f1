import { statSync, type Stats } from 'node:fs';
import {
  computePackDigest,
  DIGEST_ALGORITHM,
  diffPackManifests,
  digestManifest,
  parseManifestLines,
  type PackManifestDiff,
} from '@packwarden/pack-digest';
import { loadPackManifest } from '@packwarden/pack-manifest';
import { PACK_SIGNATURE_MAX_CLOCK_SKEW_SECONDS } from './constants.js';
import { checkEs256Jws, toP256PublicKey } from './es256.js';
import { PackSignatureError } from './errors.js';
import { isKeySelection, type KeySelection, type KeySelector } from './key-selection.js';
import { describePayloadIssues, PackSignaturePayloadSchema } from './payload.js';
import { readPackToken } from './read-signature.js';
import type { PackInvalid, PackSignatureClaims, PackVerification } from './results.js';

export interface VerifyPackOptions {
  /** Picks the trusted key for the token's `kid` at its `iat`. Required. */
  selectKey: KeySelector;
  /** Aborts reading and digesting; `verifyPack` then rejects with `ERR_ABORTED`. */
  signal?: AbortSignal;
  /** The verifier's clock, for refusing an `iat` in the future. Default `() => new Date()`. */
  now?: () => Date;
}

interface ResolvedVerifyOptions {
  selectKey: KeySelector;
  signal: AbortSignal | undefined;
  now: () => Date;
}

function resolveVerifyOptions(options: VerifyPackOptions): ResolvedVerifyOptions {
  if (typeof options !== 'object' || options === null || typeof options.selectKey !== 'function') {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      'verifyPack: options.selectKey must be a function, e.g. (kid, at) => selectTrustedKey(root, kid, { at }).',
    );
  }
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      'verifyPack: options.signal must be an AbortSignal.',
    );
  }
  if (options.now !== undefined && typeof options.now !== 'function') {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      'verifyPack: options.now must be a function returning a Date.',
    );
  }
  return {
    selectKey: options.selectKey,
    signal: options.signal,
    now: options.now ?? ((): Date => new Date()),
  };
}

/**
 * Verifies the `pack.sig` of the pack in `packDir` against the key `selectKey` picks, in the
 * order of the README, "verifyPack" (nothing in the payload is trusted before the signature verified):
 * pre-parse, key selection at `iat`, ES256 signature, payload schema, identity against
 * `agent.yaml`, digest algorithm, `files` claim, content digest.
 *
 * Resolves with a `PackVerification` for everything about the pack and its token. Rejects with
 * a `PackSignatureError` only for caller errors: bad options (`ERR_INVALID_ARGUMENT`), a
 * selector that throws or answers garbage (`ERR_KEY_SELECTOR`), a selected key that is not a
 * P-256 public key (`ERR_VERIFICATION_KEY_INVALID`), or an abort (`ERR_ABORTED`).
 */
export async function verifyPack(
  packDir: string,
  options: VerifyPackOptions,
): Promise<PackVerification> {
  const { selectKey, signal, now } = resolveVerifyOptions(options);
  if (typeof packDir !== 'string' || packDir === '') {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      'verifyPack: packDir must be a non-empty string.',
    );
  }
  checkAborted(signal);

  // statSync: a few microseconds, where the thread pool's round trip costs more (issue 14).
  let folder: Stats | NodeJS.ErrnoException;
  try {
    folder = statSync(packDir);
  } catch (error) {
    folder = error as NodeJS.ErrnoException;
  }
  if (folder instanceof Error || !folder.isDirectory()) {
    return invalid(
      'pack-unreadable',
      folder instanceof Error
        ? `cannot read the pack folder ${packDir}: ${folder.code ?? folder.message}`
        : `${packDir} is not a folder`,
      folder instanceof Error && folder.code ? { code: folder.code } : {},
    );
  }

  let read;
  try {
    read = await readPackToken(packDir);
  } catch (error) {
    if (error instanceof PackSignatureError && error.code === 'ERR_SIGNATURE_UNREADABLE') {
      return invalid('pack-unreadable', error.message, { code: error.code });
    }
    throw error;
  }
  if (read.kind === 'absent') {
    return { kind: 'unsigned', message: `${packDir} has no pack.sig: the pack is not signed.` };
  }
  if (read.kind === 'malformed') {
    return invalid('malformed', `pack.sig is malformed: ${read.message}.`, {
      malformed: read.reason,
    });
  }
  const token = read.parsed;
  const kid = token.header.kid;
  const at = new Date(token.iat * 1000);

  const selection = await callSelector(selectKey, kid, at);
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
        message: `pack.sig is signed by key "${kid}", which is not trusted: ${selection.message}`,
      };
    case 'ok':
      break;
  }
  if (selection.key.kid !== kid) {
    throw new PackSignatureError(
      'ERR_KEY_SELECTOR',
      `verifyPack: selectKey was asked for kid "${kid}" and answered with key "${selection.key.kid}".`,
    );
  }
  const key = toP256PublicKey(selection.key.key);
  if (!key.ok) {
    throw new PackSignatureError(
      'ERR_VERIFICATION_KEY_INVALID',
      `verifyPack: the key selected for "${kid}" is ${key.problem}; pack.sig v1 is verified with EC P-256 public keys.`,
    );
  }
  const thumbprint = selection.key.thumbprint;
  const signer = { kid, ...(thumbprint === undefined ? {} : { thumbprint }) };

  if (!(await checkEs256Jws(token, key.key))) {
    return invalid(
      'bad-signature',
      `the signature of pack.sig does not verify with the trusted key "${kid}": the token was altered or signed by another key.`,
      signer,
    );
  }

  // From here on the payload is authentic: it is what the key holder signed.
  const checked = PackSignaturePayloadSchema.safeParse(token.payload);
  if (!checked.success) {
    return invalid(
      'payload-invalid',
      `the signed payload is not a valid pack.sig v1 payload: ${describePayloadIssues(checked.error)}.`,
      signer,
    );
  }
  const payload = checked.data;
  const claims: PackSignatureClaims = {
    pack: payload.pack,
    packVersion: payload.packVersion,
    digest: payload.digest,
    iat: at,
    ...signer,
  };
  const nowMs = now().getTime();
  if (!Number.isFinite(nowMs)) {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      'verifyPack: options.now must return a valid Date.',
    );
  }
  if (payload.iat > Math.floor(nowMs / 1000) + PACK_SIGNATURE_MAX_CLOCK_SKEW_SECONDS) {
    // README "verifyPack": a signature from the future is refused, whatever key made it.
    return invalid(
      'issued-in-future',
      `pack.sig says it was signed at ${at.toISOString()}, more than ${PACK_SIGNATURE_MAX_CLOCK_SKEW_SECONDS / 60} minutes after this verifier's clock (${new Date(nowMs).toISOString()}): a crafted or misdated signature is refused.`,
      claims,
    );
  }
  if (payload.files !== undefined && payload.digestAlg === undefined) {
    return invalid(
      'payload-invalid',
      'the signed payload has a files claim without digestAlg; files are lines of a packwarden-digest/1 manifest.',
      claims,
    );
  }

  let manifest;
  try {
    manifest = loadPackManifest(packDir).manifest;
  } catch (error) {
    return invalid(
      'manifest-invalid',
      `cannot check what the signature names: ${(error as Error).message}`,
      { ...claims, ...codeOf(error) },
    );
  }
  const { name, version } = manifest.metadata;
  if (payload.pack !== name || payload.packVersion !== version) {
    return invalid(
      'identity-mismatch',
      `pack.sig signs ${JSON.stringify(`${payload.pack}@${payload.packVersion}`)} but agent.yaml declares ${JSON.stringify(`${name}@${version}`)}.`,
      { ...claims, manifest: { name, version } },
    );
  }

  if (payload.digestAlg === undefined) {
    return {
      kind: 'digest-unsupported',
      ...claims,
      message: `genuine signature by "${kid}" for ${payload.pack}@${payload.packVersion}, but its digest follows the AgentHippo runtime's unpublished rules: the content cannot be checked.`,
    };
  }
  if (payload.digestAlg !== DIGEST_ALGORITHM) {
    return invalid(
      'unknown-digest-alg',
      `pack.sig uses digest algorithm ${JSON.stringify(payload.digestAlg)}; this verifier knows only ${DIGEST_ALGORITHM}.`,
      claims,
    );
  }

  let signedEntries;
  if (payload.files !== undefined) {
    let filesDigest: string;
    try {
      signedEntries = parseManifestLines(payload.files);
      filesDigest = digestManifest(signedEntries);
    } catch (error) {
      return invalid(
        'payload-invalid',
        `the signed files claim is not a canonical manifest: ${(error as Error).message}.`,
        claims,
      );
    }
    if (filesDigest !== payload.digest) {
      return invalid(
        'files-mismatch',
        'the signed files claim does not hash to the signed digest: the token is inconsistent and is refused.',
        claims,
      );
    }
  }

  checkAborted(signal);
  let actual;
  try {
    actual = await computePackDigest(packDir, signal ? { signal } : {});
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_DIGEST_ABORTED') {
      throw new PackSignatureError('ERR_ABORTED', 'verifyPack was aborted.', { cause: error });
    }
    return invalid(
      'pack-unreadable',
      `cannot digest the pack's content: ${(error as Error).message}`,
      { ...claims, ...codeOf(error) },
    );
  }
  if (actual.digest !== payload.digest) {
    const changes: PackManifestDiff | undefined =
      signedEntries === undefined ? undefined : diffPackManifests(signedEntries, actual.entries);
    return invalid(
      'digest-mismatch',
      `the pack's content changed after it was signed${changes ? `: ${summarizeChanges(changes)}` : ''}.`,
      { ...claims, actualDigest: actual.digest, ...(changes ? { changes } : {}) },
    );
  }
  return {
    kind: 'verified',
    ...claims,
    digestAlg: DIGEST_ALGORITHM,
    message: `verified: ${payload.pack}@${payload.packVersion} signed by "${kid}" at ${at.toISOString()}, content unchanged.`,
  };
}

async function callSelector(selectKey: KeySelector, kid: string, at: Date): Promise<KeySelection> {
  let selection: unknown;
  try {
    selection = await selectKey(kid, at);
  } catch (cause) {
    throw new PackSignatureError(
      'ERR_KEY_SELECTOR',
      `verifyPack: selectKey threw for kid "${kid}": ${(cause as Error)?.message ?? String(cause)}`,
      { cause },
    );
  }
  if (!isKeySelection(selection)) {
    throw new PackSignatureError(
      'ERR_KEY_SELECTOR',
      'verifyPack: selectKey must return a KeySelection ({ kind: "ok", key } or a refusal).',
    );
  }
  return selection;
}

function invalid(
  reason: PackInvalid['reason'],
  message: string,
  extra: Omit<Partial<PackInvalid>, 'kind' | 'reason' | 'message'> = {},
): PackInvalid {
  return { kind: 'invalid', reason, message, ...extra };
}

function codeOf(error: unknown): { code?: string } {
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' ? { code } : {};
}

function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    throw new PackSignatureError('ERR_ABORTED', 'verifyPack was aborted.', {
      cause: signal.reason,
    });
  }
}

function summarizeChanges(changes: PackManifestDiff): string {
  const parts: string[] = [];
  const list = (label: string, paths: string[]): void => {
    if (paths.length === 0) return;
    const shown = paths.slice(0, 5).map((path) => JSON.stringify(path));
    parts.push(
      `${label} ${shown.join(', ')}${paths.length > 5 ? ` and ${paths.length - 5} more` : ''}`,
    );
  };
  list('added', changes.added);
  list('removed', changes.removed);
  list('modified', changes.modified);
  list('execute bit changed on', changes.modeChanged);
  return parts.length === 0 ? 'no file-level change found' : parts.join('; ');
}
