import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
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
  const file = join(packDir, PACK_SIGNATURE_FILE);
  // Synchronous calls on purpose: the file is at most PACK_SIGNATURE_MAX_BYTES and opened with
  // O_NONBLOCK, so each call returns in microseconds, where four trips through libuv's thread
  // pool cost more than the read itself and, on a busy machine, wait for a free core.
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
      return malformed(
        'not-regular-file',
        `${PACK_SIGNATURE_FILE} is a symlink; it must be a regular file`,
      );
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
      return malformed('not-regular-file', `${PACK_SIGNATURE_FILE} is not a regular file`);
    }
    if (stats.size > PACK_SIGNATURE_MAX_BYTES) {
      return malformed(
        'too-large',
        `${PACK_SIGNATURE_FILE} is ${stats.size} bytes, more than the ${PACK_SIGNATURE_MAX_BYTES} allowed`,
      );
    }
    // Read at most one byte past what fstat said: a file that grows meanwhile is still bounded.
    const buffer = Buffer.allocUnsafe(Math.min(stats.size, PACK_SIGNATURE_MAX_BYTES) + 1);
    let length = 0;
    while (length < buffer.length) {
      const bytesRead = readSync(fd, buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > stats.size) {
      return malformed('too-large', `${PACK_SIGNATURE_FILE} grew while it was being read`);
    }
    // latin1 maps each byte to one character, so a non-ASCII byte is refused as a character
    // outside base64url instead of being decoded.
    const parsed = parsePackToken(buffer.toString('latin1', 0, length));
    if (!parsed.ok) return malformed(parsed.reason, parsed.message);
    return { kind: 'present', parsed: parsed.value };
  } catch (cause) {
    throw new PackSignatureError(
      'ERR_SIGNATURE_UNREADABLE',
      `cannot read ${file}: ${(cause as Error).message}`,
      { cause },
    );
  } finally {
    try {
      closeSync(fd);
    } catch {
      // Nothing was written through it; a failed close changes nothing about what was read.
    }
  }
}

function malformed(reason: MalformedReason, message: string): ReadPackToken {
  return { kind: 'malformed', reason, message };
}
