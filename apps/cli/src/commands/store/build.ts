import { resolve } from 'node:path';
import { buildStaticStore } from '@packwarden/store-client';
import { EXIT } from '../../errors.js';
import { printJson, type CliIo } from '../../io.js';

export async function storeBuild(
  io: CliIo,
  packsDir: string,
  flags: { out: string; baseUrl?: string; json?: boolean },
): Promise<number> {
  const built = await buildStaticStore(resolve(io.cwd, packsDir), {
    out: resolve(io.cwd, flags.out),
    ...(flags.baseUrl === undefined ? {} : { baseUrl: flags.baseUrl }),
  });
  if (flags.json) {
    printJson(io, { ...built });
    return EXIT.ok;
  }
  for (const pack of built.packs) {
    io.stdout.write(
      `${pack.slug}@${pack.version}  ${pack.archive}  ${pack.size} bytes  ${pack.signed ? 'signed' : 'unsigned'}\n`,
    );
  }
  io.stdout.write(
    `wrote ${built.indexFile} (${built.packs.length} pack version${built.packs.length === 1 ? '' : 's'})\n`,
  );
  return EXIT.ok;
}
