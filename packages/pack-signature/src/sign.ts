import { createPublicKey } from 'node:crypto';
import { join, resolve } from 'node:path';
import { computePackDigest, DIGEST_ALGORITHM, formatManifestLine } from '@packwarden/pack-digest';
import { loadPackManifest } from '@packwarden/pack-manifest';
import { CompactSign } from 'jose';
import { removeStaleTemporaries, writeFileAtomic } from './atomic-write.js';
import {
  FILE_LIST_MAX_ENTRIES,
  PACK_SIGNATURE_ALG,
  PACK_SIGNATURE_FILE,
  PACK_SIGNATURE_IAT_RANGE,
  PACK_SIGNATURE_MAX_BYTES,
} from './constants.js';
import { checkEs256Jws } from './es256.js';
import { PackSignatureError } from './errors.js';
import { kidProblem } from '@packwarden/pack-manifest/resolve';
import { PackSignaturePayloadSchema } from './payload.js';
import { importSigningKey } from './signing-key.js';
import { parsePackToken, type PackSignatureHeader } from './strict-jws.js';

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

interface ResolvedSignOptions {
  privateKeyPem: string;
  kid: string;
  fileList: boolean;
  now: Date;
  write: boolean;
  signal: AbortSignal | undefined;
}

function resolveSignOptions(options: SignPackOptions): ResolvedSignOptions {
  if (typeof options !== 'object' || options === null) {
    throw new PackSignatureError('ERR_INVALID_ARGUMENT', 'signPack: options must be an object.');
  }
  const problem = kidProblem(options.kid);
  if (problem !== undefined) {
    throw new PackSignatureError('ERR_INVALID_KID', `signPack: ${problem}.`);
  }
  const now = options.now ?? new Date();
  if (!(now instanceof Date) || Number.isNaN(now.getTime())) {
    throw new PackSignatureError('ERR_INVALID_ARGUMENT', 'signPack: now must be a valid Date.');
  }
  for (const name of ['fileList', 'write'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'boolean') {
      throw new PackSignatureError('ERR_INVALID_ARGUMENT', `signPack: ${name} must be a boolean.`);
    }
  }
  return {
    privateKeyPem: options.privateKeyPem,
    kid: options.kid,
    fileList: options.fileList ?? true,
    now,
    write: options.write ?? true,
    signal: options.signal,
  };
}

/**
 * Signs the pack in `packDir`: validates its `agent.yaml`, computes Pack digest v1 and signs
 * `{pack, packVersion, digest, iat, digestAlg, files?}` with ES256. By default writes
 * `<packDir>/pack.sig` atomically. The new token is run through this package's own verifier
 * checks before it is returned or written.
 */
export async function signPack(packDir: string, options: SignPackOptions): Promise<SignedPack> {
  if (typeof packDir !== 'string' || packDir === '') {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      'signPack: packDir must be a non-empty string.',
    );
  }
  const resolved = resolveSignOptions(options);
  const iat = Math.floor(resolved.now.getTime() / 1000);
  if (iat < PACK_SIGNATURE_IAT_RANGE.min || iat > PACK_SIGNATURE_IAT_RANGE.max) {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      'signPack: now must lie between 2000-01-01 and 2100-01-01; verifiers refuse any other iat.',
    );
  }
  const privateKey = importSigningKey(resolved.privateKeyPem);

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
  if (resolved.write) {
    // A signer killed between its temporary file and the rename leaves that file in the pack
    // root, where this digest would count it as content: clear it first.
    const busy = await removeStaleTemporaries(packDir, PACK_SIGNATURE_FILE).catch(() => []);
    if (busy.length > 0) {
      throw new PackSignatureError(
        'ERR_SIGNING_IN_PROGRESS',
        `another process is signing ${packDir} right now (${busy.join(', ')}); try again when it is done`,
      );
    }
  }
  let packDigest;
  try {
    packDigest = await computePackDigest(
      packDir,
      resolved.signal ? { signal: resolved.signal } : {},
    );
  } catch (cause) {
    if ((cause as { code?: string }).code === 'ERR_DIGEST_ABORTED') {
      throw new PackSignatureError('ERR_ABORTED', 'signPack was aborted.', { cause });
    }
    throw new PackSignatureError(
      'ERR_PACK_UNREADABLE',
      `cannot digest ${packDir}: ${(cause as Error).message}`,
      { cause },
    );
  }

  const base = {
    pack: manifest.metadata.name,
    packVersion: manifest.metadata.version,
    digest: packDigest.digest,
    iat,
    digestAlg: DIGEST_ALGORITHM,
  } as const;
  const header = { alg: PACK_SIGNATURE_ALG, typ: 'JWT', kid: resolved.kid } as const;

  let fileListOmitted: FileListOmission | undefined;
  let payload: SignedPackPayload = { ...base };
  if (!resolved.fileList) fileListOmitted = 'disabled';
  else if (packDigest.entries.length > FILE_LIST_MAX_ENTRIES) fileListOmitted = 'too-many-entries';
  else payload = { ...base, files: packDigest.entries.map(formatManifestLine) };

  let token = await signPayload(payload, header, privateKey);
  if (token.length + 1 > PACK_SIGNATURE_MAX_BYTES && payload.files !== undefined) {
    // Very long paths can make the list exceed what a verifier reads; the digest still binds.
    payload = { ...base };
    fileListOmitted = 'too-large';
    token = await signPayload(payload, header, privateKey);
  }
  await selfCheck(token, privateKey);

  const file = join(resolve(packDir), PACK_SIGNATURE_FILE);
  if (resolved.write) {
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
    digest: packDigest.digest,
    file,
    written: resolved.write,
    ...(fileListOmitted === undefined ? {} : { fileListOmitted }),
    entryCount: packDigest.entries.length,
  };
}

async function signPayload(
  payload: SignedPackPayload,
  header: PackSignatureHeader,
  privateKey: ReturnType<typeof importSigningKey>,
): Promise<string> {
  return new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ ...header })
    .sign(privateKey);
}

// What a signer writes must pass its own verifier: never ship a token every fleet refuses.
async function selfCheck(
  token: string,
  privateKey: ReturnType<typeof importSigningKey>,
): Promise<void> {
  const parsed = parsePackToken(token);
  const ok =
    parsed.ok &&
    PackSignaturePayloadSchema.safeParse(parsed.value.payload).success &&
    (await checkEs256Jws(parsed.value, createPublicKey(privateKey)));
  if (!ok) {
    throw new PackSignatureError(
      'ERR_INTERNAL',
      `signPack produced a token its own verifier refuses${parsed.ok ? '' : ` (${parsed.message})`}.`,
    );
  }
}
