import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { exportPack } from '@packwarden/store-client';
import { CliError, EXIT } from '../../errors.js';
import { printJson, terminalSafe as safe, type CliIo } from '../../io.js';
import { resolvePackArgument } from '../../shared/pack-argument.js';

/** A temporary file next to `file`, fsynced, then renamed over it: never a half-written archive. */
async function writeAtomic(file: string, bytes: Uint8Array): Promise<void> {
  const temp = join(dirname(file), `.${basename(file)}.partial-${randomBytes(6).toString('hex')}`);
  try {
    const handle = await open(temp, 'wx', 0o644);
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (cause) {
    await rm(temp, { force: true });
    throw new CliError(`cannot write ${file}: ${(cause as Error).message}`, EXIT.failure);
  }
}

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
  await writeAtomic(out, exported.archive);
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
