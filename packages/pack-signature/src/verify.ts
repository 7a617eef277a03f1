import {
  DIGEST_ALGORITHM,
  diffPackManifests,
  digestManifest,
  parseManifestLines,
  type PackManifestDiff,
} from '@packwarden/pack-digest';
import { loadPackManifest } from '@packwarden/pack-manifest';
import { PACK_SIGNATURE_FILE } from './constants.js';
import type { KeySelector } from './key-selection.js';
import { PackSignaturePayloadSchema } from './payload.js';
import type { PackInvalid, PackSignatureClaims, PackVerification } from './results.js';
import {
  checkFolderSignature,
  codeOf,
  digestOrRefusal,
  invalidResult,
  resolveVerifyOptions,
  type SignedFolderKind,
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
  const resolved = resolveVerifyOptions(options, PACK_SIGNATURE.caller);
  const checked = await checkFolderSignature(packDir, resolved, PACK_SIGNATURE);
  if (checked.kind !== 'authentic') return checked;
  const { payload, claims } = checked;
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

  const actual = await digestOrRefusal(packDir, resolved, PACK_SIGNATURE, claims);
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
