import { lstat } from 'node:fs/promises';
import { readBoundedFile, writeFileAtomic } from '@packwarden/pack-manifest/fs';
import { PackSignatureError } from './errors.js';

/** A PEM private key is a few hundred bytes; anything larger is the wrong file. */
export const KEY_FILE_MAX_BYTES = 64 * 1024;

export interface WriteKeyFileOptions {
  /** Replace an existing file. Default `false`: an existing file is `ERR_KEY_FILE_EXISTS`. */
  force?: boolean;
}

/**
 * Reads a private signing key (README "Key files"), refusing one that group or others can read
 * (`ERR_KEY_FILE_UNSAFE`): a signing key that leaked is a fleet that runs whatever its holder
 * signs. A missing file, a symlink, a folder or more than `KEY_FILE_MAX_BYTES` is
 * `ERR_KEY_FILE_UNREADABLE`. The file is read by `readBoundedFile` (no symlink followed, no FIFO
 * waited on) and its mode checked on the descriptor read, so what was checked is what is read.
 */
export async function readPrivateKeyFile(path: string): Promise<string> {
  const unreadable = (message: string, cause?: unknown) =>
    new PackSignatureError('ERR_KEY_FILE_UNREADABLE', message, { cause });
  const cannotRead = (cause: unknown) =>
    unreadable(`cannot read the key file ${path}: ${(cause as Error).message}`, cause);
  const read = readBoundedFile(path, KEY_FILE_MAX_BYTES);
  switch (read.kind) {
    case 'failed':
      // A key file that opened but cannot be read (EIO) is not a refusal: the OS error goes up as is.
      if (read.step === 'read') throw read.cause;
      throw cannotRead(read.cause);
    case 'absent':
    case 'symlink':
      throw cannotRead(read.cause);
    case 'not-regular-file':
      throw unreadable(`${path} is not a regular file`);
    case 'too-large':
    case 'grew':
    case 'read':
      break;
  }
  // Checked on the descriptor that was read, before its size: a key others can read is refused
  // as unsafe whatever else is wrong with it.
  if (process.platform !== 'win32' && (read.stats.mode & 0o077) !== 0) {
    throw new PackSignatureError(
      'ERR_KEY_FILE_UNSAFE',
      `the key file ${path} is readable by group or others (mode ${(read.stats.mode & 0o777).toString(8).padStart(4, '0')}); refusing to sign with it`,
    );
  }
  if (read.kind !== 'read') throw unreadable(`${path} is too large to be a PEM key`);
  return read.bytes.toString('utf8');
}

async function writeNew(
  path: string,
  text: string,
  mode: number,
  options: WriteKeyFileOptions,
): Promise<void> {
  const exists = await lstat(path).then(
    () => true,
    () => false,
  );
  if (exists && options.force !== true)
    throw new PackSignatureError('ERR_KEY_FILE_EXISTS', `${path} already exists`);
  try {
    await writeFileAtomic(path, text, { mode });
  } catch (cause) {
    throw new PackSignatureError(
      'ERR_KEY_FILE_WRITE',
      `cannot write ${path}: ${(cause as Error).message}`,
      { cause },
    );
  }
}

/**
 * Writes a new private key (`generateKeypair().privateKeyPem`) with mode 0600 from the first byte,
 * never a moment readable by others, through a temporary file renamed into place, so a crash
 * leaves no half-written key. Refuses to replace an existing file unless `force`.
 */
export async function writePrivateKeyFile(
  path: string,
  privateKeyPem: string,
  options: WriteKeyFileOptions = {},
): Promise<void> {
  await writeNew(path, privateKeyPem, 0o600, options);
}

/**
 * Writes the public keys file verifiers read (`{kid: PEM}`, the form trust-root's keys files and
 * `PACKWARDEN_PACK_SIGNING_KEYS` accept), mode 0644, atomically as `writePrivateKeyFile`.
 */
export async function writePublicKeysFile(
  path: string,
  keys: Readonly<Record<string, string>>,
  options: WriteKeyFileOptions = {},
): Promise<void> {
  await writeNew(path, `${JSON.stringify(keys, null, 2)}\n`, 0o644, options);
}
