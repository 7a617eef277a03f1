import { resolve } from 'node:path';
import {
  installPack,
  openPackArchive,
  parseArtifactRef,
  type ArtifactRef,
  type InstallResult,
} from '@packwarden/store-client';
import { CliError, EXIT } from '../../errors.js';
import { printJson, type CliIo } from '../../io.js';
import type { InstallFlags } from '../../shared/install-options.js';
import { installPolicy } from '../../shared/trust.js';
import { isArchiveFileArgument, openStoreAt } from './source.js';

/** A one-line progress bar on stderr, only when stderr is a terminal. */
function progressReporter(io: CliIo) {
  if (!io.stderr.isTTY) return undefined;
  let last = '';
  return (progress: { phase: string; bytes?: number; total?: number }) => {
    const { phase, bytes, total } = progress;
    let line = `${phase}…`;
    if (bytes !== undefined && total) {
      const width = 24;
      const filled = Math.min(width, Math.round((bytes / total) * width));
      line = `${phase} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${Math.round((bytes / total) * 100)}%`;
    } else if (bytes !== undefined) line = `${phase} ${(bytes / 1024).toFixed(0)} KiB`;
    if (line !== last) io.stderr.write(`\r\u001b[2K${line}`);
    last = line;
  };
}

async function install(
  io: CliIo,
  reference: string,
  flags: InstallFlags,
  to?: string,
): Promise<number> {
  const local = isArchiveFileArgument(reference);
  if (local && flags.store !== undefined)
    throw new CliError(`${reference} is a local archive: it takes no --store`, EXIT.usage);
  const policy = await installPolicy(io, flags);
  // A local .tar.gz (`pack export`'s) installs through the same installPack as a store's.
  const store = local
    ? await openPackArchive(resolve(io.cwd, reference), { env: io.env })
    : await openStoreAt(io, flags.store, true);
  const parsed: ArtifactRef = local
    ? { type: 'pack', slug: store.list()[0]!.slug }
    : parseArtifactRef(reference);
  const onProgress = progressReporter(io);
  let result: InstallResult;
  try {
    result = await installPack(store, parsed, {
      env: io.env,
      ...policy,
      ...(flags.force ? { force: true } : {}),
      ...(flags.allowDowngrade ? { allowDowngrade: true } : {}),
      ...(to === undefined ? {} : { to: resolve(io.cwd, to) }),
      ...(onProgress ? { onProgress } : {}),
    });
  } finally {
    if (onProgress) io.stderr.write('\r\u001b[2K');
  }
  if (flags.json) {
    printJson(io, { store: { url: store.url, kind: store.kind }, installed: result });
    return EXIT.ok;
  }
  const signature = result.verification
    ? `, signature ${result.verification.kind}`
    : ', signature not checked (no trust root given)';
  io.stdout.write(
    `installed ${result.slug}@${result.version} into ${result.dir}${result.replaced ? ' (replaced)' : ''}\n  digest ${result.digest}${signature}\n`,
  );
  return EXIT.ok;
}

export async function storeInstall(
  io: CliIo,
  reference: string,
  flags: InstallFlags,
): Promise<number> {
  return install(io, reference, flags);
}

/** `pack install <slug>[@version] --to DIR`: the pack, extracted flat into DIR. */
export async function packInstall(io: CliIo, slug: string, flags: InstallFlags): Promise<number> {
  if (flags.to === undefined)
    throw new CliError(
      'pack install needs --to DIR (or use `packwarden store install pack/<slug>`)',
      EXIT.usage,
    );
  const reference = isArchiveFileArgument(slug) || slug.includes('/') ? slug : `pack/${slug}`;
  return install(io, reference, flags, flags.to);
}
