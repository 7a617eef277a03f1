import { isPackSignatureError } from '@packwarden/pack-signature';
import { CliError, EXIT } from '../../errors.js';

/**
 * Key files are read and written by pack-signature (its README "Key files"); a refusal there is
 * the operator's configuration: exit 2 with `ERR_CLI_KEY_FILE` and a hint naming the flag to
 * change.
 */
export function keyFileError(flag: '--key' | '-o' | '--public-out', path: string) {
  return (error: unknown): never => {
    if (!isPackSignatureError(error) || !error.code.startsWith('ERR_KEY_FILE_')) throw error;
    const hints: Record<string, string | undefined> = {
      ERR_KEY_FILE_UNREADABLE: 'create one with `packwarden pack keygen -o FILE`',
      ERR_KEY_FILE_UNSAFE: `chmod 600 ${path}, and consider the key exposed if others could read it`,
      ERR_KEY_FILE_EXISTS: `choose another ${flag} FILE, or pass --force to replace it`,
    };
    throw new CliError(error.message, EXIT.usage, hints[error.code], {
      code: 'ERR_CLI_KEY_FILE',
      cause: error,
    });
  };
}
