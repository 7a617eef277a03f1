import {
  DIGEST_ALGORITHM,
  diffPackManifests,
  digestManifest,
  formatManifestLine,
  parseManifestLines,
  type PackManifestDiff,
  type PackManifestEntry,
} from '@packwarden/pack-digest';
import { loadPackManifest } from '@packwarden/pack-manifest';
import type * as z from 'zod';
import { PACK_SIGNATURE_FILE } from './constants.js';
import type { KeySelector } from './key-selection.js';
import { PackSignaturePayloadSchema } from './payload.js';
import type { PackInvalid, PackSignatureClaims, PackVerification } from './results.js';
import {
  codeOf,
  digestOrRefusal,
  invalidResult,
  type ResolvedVerifyOptions,
  type SignedFolderKind,
  verifySignedFolder,
} from './verify-folder.js';

export interface VerifyPackOptions {
  /** Picks the trusted key for the token's `kid` at its `iat`. Required. */
  selectKey: KeySelector;
  /** Aborts reading and digesting; `verifyPack` then rejects with `ERR_ABORTED`. */
  signal?: AbortSignal;
  /** The verifier's clock, for refusing an `iat` in the future. Default `() => new Date()`. */
  now?: () => Date;
}

/** `pack.sig` for the steps it shares with `engine.sig` (`verify-folder.ts`). */
const PACK_SIGNATURE: SignedFolderKind<
  typeof PackSignaturePayloadSchema,
  Pick<PackSignatureClaims, 'pack' | 'packVersion'>,
  'pack-unreadable'
> = {
  caller: 'verifyPack',
  subject: 'pack',
  file: PACK_SIGNATURE_FILE,
  unreadable: 'pack-unreadable',
  schema: PackSignaturePayloadSchema,
  identity: (payload) => ({ pack: payload.pack, packVersion: payload.packVersion }),
};

const invalid = invalidResult<PackInvalid>;

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
  return verifySignedFolder(packDir, options, PACK_SIGNATURE, (payload, claims, resolved) =>
    checkPackContent(packDir, resolved, payload, claims),
  );
}

/** The steps after an authentic payload: identity, digest algorithm, `files` claim, digest. */
async function checkPackContent(
  packDir: string,
  resolved: ResolvedVerifyOptions,
  payload: z.output<typeof PackSignaturePayloadSchema>,
  claims: PackSignatureClaims,
): Promise<PackVerification> {
  const { kid, iat: at } = claims;

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

  // The content is digested before the files claim is judged: when the claim's lines are the
  // lines of the entries found and the digests agree, the claim is canonical and hashes to the
  // signed digest, with no parse and no second manifest hash (issue 14). Otherwise the claim is
  // judged in full, and its refusal comes first, as it always has.
  const actual = await digestOrRefusal(packDir, resolved, PACK_SIGNATURE, claims);
  let signedEntries: PackManifestEntry[] | undefined;
  if (
    payload.files !== undefined &&
    !(actual.ok && actual.digest === payload.digest && claimNames(payload.files, actual.entries))
  ) {
    const judged = judgeFilesClaim(payload.files, payload.digest);
    if ('reason' in judged) return invalid(judged.reason, judged.message, claims);
    signedEntries = judged.entries;
  }
  if (!actual.ok) return actual.refusal;
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

/**
 * Every line of the claim is the manifest line of the entry found at its place. The entries come
 * from the digest walk, so they are canonical and sorted: such a claim parses back to them.
 */
function claimNames(files: readonly string[], entries: readonly PackManifestEntry[]): boolean {
  if (files.length !== entries.length) return false;
  for (let index = 0; index < files.length; index++) {
    if (files[index] !== formatManifestLine(entries[index]!)) return false;
  }
  return true;
}

/** A signed files claim must be a canonical manifest that hashes to the signed digest. */
function judgeFilesClaim(
  files: readonly string[],
  digest: string,
):
  | { entries: PackManifestEntry[] }
  | { reason: 'payload-invalid' | 'files-mismatch'; message: string } {
  let entries: PackManifestEntry[];
  let filesDigest: string;
  try {
    entries = parseManifestLines(files);
    filesDigest = digestManifest(entries);
  } catch (error) {
    return {
      reason: 'payload-invalid',
      message: `the signed files claim is not a canonical manifest: ${(error as Error).message}.`,
    };
  }
  if (filesDigest !== digest) {
    return {
      reason: 'files-mismatch',
      message:
        'the signed files claim does not hash to the signed digest: the token is inconsistent and is refused.',
    };
  }
  return { entries };
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
