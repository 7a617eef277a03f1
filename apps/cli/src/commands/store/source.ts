import { resolve } from 'node:path';
import { openStore, type Store } from '@packwarden/store-client/store';
import { terminalSafe as safe, type CliIo } from '../../io.js';

/** `./x.tgz`, `/abs/x.tar.gz`: a file to install, never an artifact reference (`type/slug`). */
export function isArchiveFileArgument(reference: string): boolean {
  return /\.(tgz|tar\.gz)$/i.test(reference) || /^(\.{1,2}\/|\/)/.test(reference);
}

/**
 * The store `--store` (a URL, or a folder relative to the working directory) or the environment
 * names; index rows the store skipped are reported on stderr when `report` is set.
 */
export async function openStoreAt(
  io: CliIo,
  url: string | undefined,
  report = false,
): Promise<Store> {
  const store = await openStore({
    env: io.env,
    ...(url === undefined
      ? {}
      : { url: /^[a-z][a-z0-9+.-]*:/i.test(url) ? url : resolve(io.cwd, url) }),
  });
  if (report) {
    for (const problem of store.problems)
      io.stderr.write(
        `warning: store index row ${problem.row} skipped: ${safe(problem.message)}\n`,
      );
    for (const warning of store.warnings) io.stderr.write(`warning: ${safe(warning)}\n`);
  }
  return store;
}
