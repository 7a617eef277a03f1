import { resolve } from 'node:path';
import { writeFileAtomic } from '@packwarden/pack-manifest/fs';
import { exportPack } from '@packwarden/store-client';
import { CliError, EXIT } from '../../errors.js';
import { printJson, terminalSafe as safe, type CliIo } from '../../io.js';
import { resolvePackArgument } from '../../shared/pack-argument.js';

/**
 * `packwarden pack export <pack> [-o FILE]`: the byte-reproducible `.tar.gz` static stores serve
 * and `pack install ./x.tgz` accepts (store-client README "exportPack"): the same content gives
 * the same bytes whatever the mtimes, owners or umask.
 */
export async function packExport(
  io: CliIo,
  ref: string,
  flags: { output?: string; json?: boolean },
): Promise<number> {
  const pack = await resolvePackArgument(io, ref);
  const exported = await exportPack(pack.dir);
  const out = resolve(io.cwd, flags.output ?? `${exported.slug}-${exported.version}.tgz`);
  try {
    // Never a half-written archive: a temporary file next to `out`, fsynced, renamed over it.
    await writeFileAtomic(out, exported.archive, { mode: 0o644 });
  } catch (cause) {
    throw new CliError(`cannot write ${out}: ${(cause as Error).message}`, EXIT.failure);
  }
  const summary = {
    file: out,
    slug: exported.slug,
    version: exported.version,
    size: exported.size,
    sha256: exported.sha256,
    digest: exported.digest,
    signed: exported.signed,
  };
  if (flags.json) {
    printJson(io, summary);
    return EXIT.ok;
  }
  io.stdout.write(
    `wrote ${safe(summary.file)}\n  ${safe(summary.slug)}@${safe(summary.version)}  ${summary.size} bytes  ${summary.signed ? 'signed' : 'unsigned'}\n  sha256 ${summary.sha256}\n  digest ${summary.digest}\n`,
  );
  return EXIT.ok;
}
