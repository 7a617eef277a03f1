import { open } from 'node:fs/promises';
import { errorCode } from './error-code.js';
import { TrustRootError } from './errors.js';
import { TRUST_ROOT_LIMITS } from './limits.js';
import { decodeUtf8 } from './utf8.js';

export interface KeysFileText {
  readonly text: string;
  readonly warnings: string[];
}

/**
 * Reads a keys file, never more than the size bound (the check happens while reading, so a file
 * that grows after `stat` cannot slip past it). Symlinks are followed: mounted secrets are links.
 */
export async function readKeysFile(path: string): Promise<KeysFileText> {
  const max = TRUST_ROOT_LIMITS.maxDocumentBytes;
  const warnings: string[] = [];
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (cause) {
    throw new TrustRootError(
      'ERR_KEYS_FILE_READ',
      `cannot read keys file ${path}: ${errorCode(cause)}.`,
      { cause },
    );
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) {
      throw new TrustRootError('ERR_KEYS_FILE_READ', `keys file ${path} is not a regular file.`);
    }
    if (stats.size > max) {
      throw new TrustRootError(
        'ERR_KEYS_TOO_LARGE',
        `keys file ${path} is larger than ${max} bytes.`,
      );
    }
    if ((stats.mode & 0o002) !== 0) {
      warnings.push(
        `keys file ${path} is writable by every user; anyone on this machine can change which keys are trusted.`,
      );
    }
    const buffer = Buffer.alloc(max + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > max) {
        throw new TrustRootError(
          'ERR_KEYS_TOO_LARGE',
          `keys file ${path} is larger than ${max} bytes.`,
        );
      }
    }
    return { text: decodeUtf8(buffer.subarray(0, length), `keys file ${path}`), warnings };
  } catch (cause) {
    if (cause instanceof TrustRootError) throw cause;
    throw new TrustRootError(
      'ERR_KEYS_FILE_READ',
      `cannot read keys file ${path}: ${errorCode(cause)}.`,
      { cause },
    );
  } finally {
    await handle.close();
  }
}
