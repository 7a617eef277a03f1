import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { resolvePack, type ResolvedPack } from '@packwarden/pack-manifest/resolve';
import { CliError, EXIT } from '../errors.js';
import type { CliIo } from '../io.js';

/**
 * Resolves a `<pack>` argument the way every pack command does (apps/cli/README.md "Naming a
 * pack"): a path is a path; a bare name is an installed pack, unless a folder of that name
 * exists in the current directory. Then the command refuses as ambiguous rather than guess:
 * verifying or signing the installed copy while the user meant the folder (or the reverse)
 * reports on the wrong code. `./name` names the folder, the installed pack's path names the pack.
 */
export async function resolvePackArgument(io: CliIo, ref: string): Promise<ResolvedPack> {
  const resolved = await resolvePack(ref, { cwd: io.cwd, env: io.env });
  if (resolved.source === 'path') return resolved;
  const folder = resolve(io.cwd, ref);
  const folderExists = await stat(folder).then(
    (info) => info.isDirectory(),
    () => false,
  );
  if (folderExists) {
    throw new CliError(
      `"${ref}" names both the folder ${folder} and the installed pack ${resolved.dir}`,
      EXIT.usage,
      `write ./${ref} for the folder, or ${resolved.dir} for the installed pack`,
      { code: 'ERR_CLI_PACK_AMBIGUOUS' },
    );
  }
  return resolved;
}
