import { createPublicKey, type KeyObject } from 'node:crypto';
import { join, resolve } from 'node:path';
import type { PackDigestEntry } from '@packwarden/pack-digest';
import { removeStaleTemporaries, writeFileAtomic } from '@packwarden/pack-manifest/fs';
import { kidProblem } from '@packwarden/pack-manifest/resolve';
import { CompactSign } from 'jose/jws/compact/sign';
import type * as z from 'zod';
import { PACK_SIGNATURE_ALG, PACK_SIGNATURE_IAT_RANGE } from './constants.js';
import { checkEs256Jws } from './es256.js';
import { PackSignatureError } from './errors.js';
import { digestSignedFolder } from './folder-digest.js';
import { importSigningKey } from './signing-key.js';
import { parsePackToken, type PackSignatureHeader } from './strict-jws.js';

/**
 * The steps `signPack` and `signEngine` share (README "signPack" and "Engine signatures"); what
 * differs between `pack.sig` and `engine.sig` is only what this describes.
 */
export interface SigningKind {
  /** The public function, at the head of every thrown message: `signPack`. */
  caller: string;
  /** What the folder holds: `pack` (its argument is `packDir`). */
  subject: string;
  /** The signature file written at the folder's root: `pack.sig`. */
  file: string;
  /** The payload schema a verifier applies; the signer's own token must pass it. */
  schema: z.ZodType;
}

export interface SigningOptions {
  privateKeyPem: string;
  kid: string;
  now?: Date | undefined;
  write?: boolean | undefined;
  signal?: AbortSignal | undefined;
}

export interface Signing {
  privateKey: KeyObject;
  header: PackSignatureHeader & { typ: 'JWT' };
  iat: number;
  write: boolean;
  signal: AbortSignal | undefined;
}

/**
 * Checks the caller's arguments, in this order: the folder, the options object, the `kid` (the
 * verifiers' rule, `kidProblem`), `now` and its `iat` in 2000–2100, the boolean options
 * (`write`, and `booleans` the caller adds), then reads the private key.
 */
export function resolveSigning(
  dir: string,
  options: SigningOptions,
  kind: SigningKind,
  booleans: readonly string[] = [],
): Signing {
  const { caller } = kind;
  if (typeof dir !== 'string' || dir === '') {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      `${caller}: ${kind.subject}Dir must be a non-empty string.`,
    );
  }
  if (typeof options !== 'object' || options === null) {
    throw new PackSignatureError('ERR_INVALID_ARGUMENT', `${caller}: options must be an object.`);
  }
  const problem = kidProblem(options.kid);
  if (problem !== undefined) {
    throw new PackSignatureError('ERR_INVALID_KID', `${caller}: ${problem}.`);
  }
  const now = options.now ?? new Date();
  if (!(now instanceof Date) || Number.isNaN(now.getTime())) {
    throw new PackSignatureError('ERR_INVALID_ARGUMENT', `${caller}: now must be a valid Date.`);
  }
  for (const name of [...booleans, 'write']) {
    const value = (options as unknown as Record<string, unknown>)[name];
    if (value !== undefined && typeof value !== 'boolean') {
      throw new PackSignatureError('ERR_INVALID_ARGUMENT', `${caller}: ${name} must be a boolean.`);
    }
  }
  const iat = Math.floor(now.getTime() / 1000);
  if (iat < PACK_SIGNATURE_IAT_RANGE.min || iat > PACK_SIGNATURE_IAT_RANGE.max) {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      `${caller}: now must lie between 2000-01-01 and 2100-01-01; verifiers refuse any other iat.`,
    );
  }
  return {
    privateKey: importSigningKey(options.privateKeyPem),
    header: { alg: PACK_SIGNATURE_ALG, typ: 'JWT', kid: options.kid },
    iat,
    write: options.write ?? true,
    signal: options.signal,
  };
}

/**
 * A signer killed between its temporary file and the rename leaves that file in the folder's
 * root, where the digest would count it as content: clear it first, and refuse while another
 * signer of the same folder is still running. Only when the signature file will be written.
 */
export async function clearStaleSignatures(
  dir: string,
  signing: Signing,
  kind: SigningKind,
): Promise<void> {
  if (!signing.write) return;
  const busy = await removeStaleTemporaries(dir, kind.file).catch(() => []);
  if (busy.length > 0) {
    throw new PackSignatureError(
      'ERR_SIGNING_IN_PROGRESS',
      `another process is signing ${dir} right now (${busy.join(', ')}); try again when it is done`,
    );
  }
}

/** The digest to sign (`digestSignedFolder`); a folder that cannot be digested is `ERR_PACK_UNREADABLE`. */
export async function digestToSign(
  dir: string,
  signing: Signing,
  kind: SigningKind,
): Promise<{ digest: string; entries: PackDigestEntry[] }> {
  const digested = await digestSignedFolder(dir, kind.file, signing.signal, kind.caller);
  if (digested.ok) return digested;
  throw new PackSignatureError(
    'ERR_PACK_UNREADABLE',
    `cannot digest ${dir}: ${(digested.error as Error).message}`,
    { cause: digested.error },
  );
}

export async function signPayload(payload: object, signing: Signing): Promise<string> {
  return new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ ...signing.header })
    .sign(signing.privateKey);
}

/**
 * Puts the new token through the verifier's own checks (pre-parser, `kind.schema`, both ES256
 * checks): never ship a token every fleet refuses. Then, when `write`, writes `<dir>/<file>`
 * (token and `\n`, mode 0644) atomically, so a failed write leaves the previous one untouched.
 * Returns the absolute path of the signature file, written or not.
 */
export async function checkAndWriteSignature(
  dir: string,
  token: string,
  signing: Signing,
  kind: SigningKind,
): Promise<string> {
  const parsed = parsePackToken(token);
  const ok =
    parsed.ok &&
    kind.schema.safeParse(parsed.value.payload).success &&
    (await checkEs256Jws(parsed.value, createPublicKey(signing.privateKey)));
  if (!ok) {
    throw new PackSignatureError(
      'ERR_INTERNAL',
      `${kind.caller} produced a token its own verifier refuses${parsed.ok ? '' : ` (${parsed.message})`}.`,
    );
  }
  const file = join(resolve(dir), kind.file);
  if (signing.write) {
    try {
      await writeFileAtomic(file, `${token}\n`, { mode: 0o644 });
    } catch (cause) {
      // A folder of that name cannot be replaced (rename(2) refuses): say so, not EISDIR.
      const why =
        (cause as NodeJS.ErrnoException).code === 'EISDIR'
          ? 'it is a folder; move it out of the way, the signature file takes its place'
          : (cause as Error).message;
      throw new PackSignatureError('ERR_SIGNATURE_WRITE', `cannot write ${file}: ${why}`, {
        cause,
      });
    }
  }
  return file;
}
