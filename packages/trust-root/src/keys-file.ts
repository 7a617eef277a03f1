import { errorCode, readBoundedFile } from '@packwarden/pack-manifest/fs';
import { TrustRootError } from './errors.js';
import { TRUST_ROOT_LIMITS } from './limits.js';
import { decodeUtf8 } from './utf8.js';

export interface KeysFileText {
  readonly text: string;
  readonly warnings: string[];
}

/**
 * Reads a keys file with `readBoundedFile`, never more than the size bound, and refuses one that
 * grows while it is read. Symlinks are followed (mounted secrets are links); a FIFO is refused
 * without waiting for a writer.
 */
export async function readKeysFile(path: string): Promise<KeysFileText> {
  const max = TRUST_ROOT_LIMITS.maxDocumentBytes;
  const cannotRead = (cause: unknown) =>
    new TrustRootError(
      'ERR_KEYS_FILE_READ',
      `cannot read keys file ${path}: ${errorCode(cause)}.`,
      {
        cause,
      },
    );
  const read = readBoundedFile(path, max, { followSymlinks: true });
  switch (read.kind) {
    case 'absent':
    case 'symlink':
    case 'failed':
      throw cannotRead(read.cause);
    case 'not-regular-file':
      throw new TrustRootError('ERR_KEYS_FILE_READ', `keys file ${path} is not a regular file.`);
    case 'too-large':
      throw new TrustRootError(
        'ERR_KEYS_TOO_LARGE',
        `keys file ${path} is larger than ${max} bytes.`,
      );
    case 'grew':
      throw new TrustRootError(
        'ERR_KEYS_TOO_LARGE',
        `keys file ${path} grew while it was being read (the limit is ${max} bytes).`,
      );
    case 'read':
      break;
  }
  const warnings: string[] = [];
  if ((read.stats.mode & 0o002) !== 0) {
    warnings.push(
      `keys file ${path} is writable by every user; anyone on this machine can change which keys are trusted.`,
    );
  }
  return { text: decodeUtf8(read.bytes, `keys file ${path}`), warnings };
}
