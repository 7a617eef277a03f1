import { DIGEST_ALGORITHM, formatManifestLine } from '@packwarden/pack-digest';
import { loadPackManifest } from '@packwarden/pack-manifest';
import {
  FILE_LIST_MAX_ENTRIES,
  PACK_SIGNATURE_FILE,
  PACK_SIGNATURE_MAX_BYTES,
} from './constants.js';
import { PackSignatureError } from './errors.js';
import { PackSignaturePayloadSchema } from './payload.js';
import {
  checkAndWriteSignature,
  clearStaleSignatures,
  digestToSign,
  resolveSigning,
  signPayload,
  type SigningKind,
} from './sign-folder.js';
import type { PackSignatureHeader } from './strict-jws.js';

export interface SignPackOptions {
  /** The ES256 private key, PKCS#8 PEM (as written by `generateKeypair`). Required. */
  privateKeyPem: string;
  /** The key's id, as the verifiers' trust root knows it. Required. */
  kid: string;
  /** Put the manifest lines in the `files` claim. Default `true`; left out above 5,000 entries. */
  fileList?: boolean;
  /** The signing time (`iat`). Default: now. */
  now?: Date;
  /** Write `<packDir>/pack.sig` (atomically, mode 0644). Default `true`. */
  write?: boolean;
  signal?: AbortSignal;
}

/** The payload packwarden signs. */
export interface SignedPackPayload {
  pack: string;
  packVersion: string;
  digest: string;
  iat: number;
  digestAlg: typeof DIGEST_ALGORITHM;
  files?: string[];
}

/** Why a signed token has no `files` claim. */
export type FileListOmission = 'disabled' | 'too-many-entries' | 'too-large';

export interface SignedPack {
  /** The compact JWS; `pack.sig` holds it followed by `\n`. */
  token: string;
  header: PackSignatureHeader & { typ: 'JWT' };
  payload: SignedPackPayload;
  digest: string;
  /** Absolute path of `pack.sig` (written only when `write` is true). */
  file: string;
  written: boolean;
  /** Set when `files` was left out, and why. */
  fileListOmitted?: FileListOmission;
  /** Number of manifest entries (files and symlinks) signed. */
  entryCount: number;
}

const PACK_SIGNING: SigningKind = {
  caller: 'signPack',
  subject: 'pack',
  file: PACK_SIGNATURE_FILE,
  schema: PackSignaturePayloadSchema,
};

/**
 * Signs the pack in `packDir`: validates its `agent.yaml`, computes Pack digest v1 and signs
 * `{pack, packVersion, digest, iat, digestAlg, files?}` with ES256. By default writes
 * `<packDir>/pack.sig` atomically. The new token is run through this package's own verifier
 * checks before it is returned or written.
 */
export async function signPack(packDir: string, options: SignPackOptions): Promise<SignedPack> {
  const signing = resolveSigning(packDir, options, PACK_SIGNING, ['fileList']);
  const fileList = options.fileList ?? true;

  let manifest;
  try {
    manifest = loadPackManifest(packDir).manifest;
  } catch (cause) {
    throw new PackSignatureError(
      'ERR_MANIFEST_INVALID',
      `cannot sign ${packDir}: ${(cause as Error).message}`,
      { cause },
    );
  }
  await clearStaleSignatures(packDir, signing, PACK_SIGNING);
  const packDigest = await digestToSign(packDir, signing, PACK_SIGNING);

  const base = {
    pack: manifest.metadata.name,
    packVersion: manifest.metadata.version,
    digest: packDigest.digest,
    iat: signing.iat,
    digestAlg: DIGEST_ALGORITHM,
  } as const;

  let fileListOmitted: FileListOmission | undefined;
  let payload: SignedPackPayload = { ...base };
  if (!fileList) fileListOmitted = 'disabled';
  else if (packDigest.entries.length > FILE_LIST_MAX_ENTRIES) fileListOmitted = 'too-many-entries';
  else payload = { ...base, files: packDigest.entries.map(formatManifestLine) };

  let token = await signPayload(payload, signing);
  if (token.length + 1 > PACK_SIGNATURE_MAX_BYTES && payload.files !== undefined) {
    // Very long paths can make the list exceed what a verifier reads; the digest still binds.
    payload = { ...base };
    fileListOmitted = 'too-large';
    token = await signPayload(payload, signing);
  }
  const file = await checkAndWriteSignature(packDir, token, signing, PACK_SIGNING);
  return {
    token,
    header: signing.header,
    payload,
    digest: packDigest.digest,
    file,
    written: signing.write,
    ...(fileListOmitted === undefined ? {} : { fileListOmitted }),
    entryCount: packDigest.entries.length,
  };
}
