import { TrustRootError } from './errors.js';

/** Strict UTF-8: a document with invalid bytes is refused, not repaired. */
export function decodeUtf8(bytes: Uint8Array, what: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (cause) {
    throw new TrustRootError('ERR_KEYS_PARSE', `${what} is not valid UTF-8.`, { cause });
  }
}
