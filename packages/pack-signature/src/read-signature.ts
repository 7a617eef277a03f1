import { join } from 'node:path';
import { readBoundedFile } from '@packwarden/pack-manifest/fs';
import { PACK_SIGNATURE_FILE, PACK_SIGNATURE_MAX_BYTES } from './constants.js';
import { PackSignatureError } from './errors.js';
import {
  parsePackToken,
  type MalformedReason,
  type PackSignatureHeader,
  type ParsedPackToken,
} from './strict-jws.js';

/** What a pack's `pack.sig` holds, before anything is verified. */
export type ReadPackSignature =
  | { kind: 'absent' }
  | {
      kind: 'present';
      /** The compact JWS, without its trailing newline. */
      token: string;
      header: PackSignatureHeader;
      /** UNVERIFIED: decoded by the strict pre-parser, not checked against the signature. */
      payload: Record<string, unknown>;
    }
  | { kind: 'malformed'; reason: MalformedReason; message: string };

/** Internal form: the public shape plus what verification needs. */
export type ReadPackToken =
  | { kind: 'absent' }
  | { kind: 'present'; parsed: ParsedPackToken }
  | { kind: 'malformed'; reason: MalformedReason; message: string };

/**
 * Reads `<packDir>/pack.sig` and runs the strict pre-parser on it. The file must be a regular
 * file (a symlink is `malformed`, never followed) of at most `PACK_SIGNATURE_MAX_BYTES`; a larger
 * file is refused from its size, before it is read. Throws `ERR_SIGNATURE_UNREADABLE` only when
 * the OS refuses to read it (permissions, I/O).
 */
export async function readPackSignature(packDir: string): Promise<ReadPackSignature> {
  const read = await readPackToken(packDir);
  if (read.kind !== 'present') return read;
  const { token, header, payload } = read.parsed;
  return { kind: 'present', token, header, payload };
}

/**
 * Runs the strict pre-parser on `pack.sig` text (one trailing newline allowed), for callers that
 * get the token from elsewhere (a store index). Never `absent`.
 */
export function parsePackSignature(text: string): Exclude<ReadPackSignature, { kind: 'absent' }> {
  if (typeof text !== 'string') {
    throw new PackSignatureError(
      'ERR_INVALID_ARGUMENT',
      'parsePackSignature: text must be a string.',
    );
  }
  const parsed = parsePackToken(text);
  if (!parsed.ok) return { kind: 'malformed', reason: parsed.reason, message: parsed.message };
  const { token, header, payload } = parsed.value;
  return { kind: 'present', token, header, payload };
}

// Stays async: callers await it, and the contract leaves room for an asynchronous source.
export async function readPackToken(packDir: string): Promise<ReadPackToken> {
  if (typeof packDir !== 'string' || packDir === '') {
    throw new PackSignatureError('ERR_INVALID_ARGUMENT', 'packDir must be a non-empty string.');
  }
  return readSignatureToken(packDir, PACK_SIGNATURE_FILE);
}

/**
 * Reads `<dir>/<name>` (`pack.sig`, or `engine.sig` of README "Engine signatures") bounded and
 * without following a symlink (`readBoundedFile`), and runs the strict pre-parser on it. Throws
 * `ERR_SIGNATURE_UNREADABLE` only when the OS refuses to open or read it.
 */
export function readSignatureToken(dir: string, name: string): ReadPackToken {
  const file = join(dir, name);
  const read = readBoundedFile(file, PACK_SIGNATURE_MAX_BYTES);
  switch (read.kind) {
    case 'absent':
      return { kind: 'absent' };
    case 'symlink':
      return malformed('not-regular-file', `${name} is a symlink; it must be a regular file`);
    case 'not-regular-file':
      return malformed('not-regular-file', `${name} is not a regular file`);
    case 'too-large':
      return malformed(
        'too-large',
        `${name} is ${read.size} bytes, more than the ${PACK_SIGNATURE_MAX_BYTES} allowed`,
      );
    case 'grew':
      return malformed('too-large', `${name} grew while it was being read`);
    case 'failed':
      throw new PackSignatureError(
        'ERR_SIGNATURE_UNREADABLE',
        `cannot ${read.step} ${file}: ${(read.cause as Error).message}`,
        { cause: read.cause },
      );
    case 'read':
      break;
  }
  // latin1 maps each byte to one character, so a non-ASCII byte is refused as a character
  // outside base64url instead of being decoded.
  const parsed = parsePackToken(read.bytes.toString('latin1'));
  if (!parsed.ok) return malformed(parsed.reason, parsed.message);
  return { kind: 'present', parsed: parsed.value };
}

function malformed(reason: MalformedReason, message: string): ReadPackToken {
  return { kind: 'malformed', reason, message };
}
