/**
 * How an OS or library error is named in a message or warning: its `code` (`ENOENT`, `EACCES`)
 * when it has one, which says what went wrong without the path the message already names,
 * else its message.
 */
export function errorCode(error: unknown): string {
  if (
    typeof error === 'object' &&
    error !== null &&
    'code' in error &&
    typeof error.code === 'string'
  ) {
    return error.code;
  }
  return error instanceof Error ? error.message : String(error);
}
