import { resolve } from 'node:path';
import {
  buildStaticStore,
  installPack,
  normalizeArtifactType,
  openPackArchive,
  openStore,
  parseArtifactRef,
  type ArtifactRef,
  type InstallResult,
  type Store,
  type StoreArtifact,
} from '@packwarden/store-client';
import { readPackwardenFlag } from '@packwarden/pack-manifest/resolve';
import { selectTrustedKey } from '@packwarden/trust-root';
import { CliError, EXIT } from '../errors.js';
import { printJson, terminalSafe as safe, type CliIo } from '../io.js';
import type { InstallFlags, StoreFlags } from './store.js';
import { loadTrustRootOrExit } from './verify-actions.js';

function typeFilter(type: string | undefined): { type?: StoreArtifact['type'] } {
  if (type === undefined) return {};
  const resolved = normalizeArtifactType(type);
  if (!resolved)
    throw new CliError(`unknown artifact type "${type}"`, EXIT.usage, 'use pack, skill or mcp');
  return { type: resolved };
}

async function open(io: CliIo, flags: StoreFlags): Promise<Store> {
  const store = await openStore({
    env: io.env,
    ...(flags.store === undefined
      ? {}
      : {
          url: /^[a-z][a-z0-9+.-]*:/i.test(flags.store)
            ? flags.store
            : resolve(io.cwd, flags.store),
        }),
  });
  for (const problem of store.problems)
    io.stderr.write(`warning: store index row ${problem.row} skipped: ${safe(problem.message)}\n`);
  return store;
}

function ref(artifact: StoreArtifact): string {
  return `${artifact.type}/${artifact.slug}`;
}

export async function storeList(
  io: CliIo,
  query: string | undefined,
  flags: StoreFlags & { type?: string },
): Promise<number> {
  const filter = typeFilter(flags.type);
  const store = await open(io, flags);
  const artifacts = query === undefined ? store.list(filter) : store.search(query, filter);
  if (flags.json) {
    printJson(io, {
      store: { url: store.url, kind: store.kind },
      ...(query === undefined ? {} : { query }),
      artifacts,
    });
    return EXIT.ok;
  }
  if (artifacts.length === 0) {
    io.stdout.write(
      query === undefined ? 'The store lists nothing.\n' : `Nothing matches "${query}".\n`,
    );
    return EXIT.ok;
  }
  // Store metadata is untrusted text: shown with its control characters escaped, never obeyed
  // (issue 9 W4); `--json` above carries it unchanged.
  const width = Math.max(...artifacts.map((artifact) => safe(ref(artifact)).length));
  for (const artifact of artifacts) {
    const description = artifact.description
      ? `  ${safe(artifact.description.replace(/\s+/g, ' ').slice(0, 80))}`
      : '';
    io.stdout.write(
      `${safe(ref(artifact)).padEnd(width)}  ${safe(artifact.latestVersion).padEnd(10)}${description}\n`,
    );
  }
  return EXIT.ok;
}

export async function storeInfo(io: CliIo, reference: string, flags: StoreFlags): Promise<number> {
  const parsed = parseArtifactRef(reference);
  const store = await open(io, flags);
  const artifact = store.info(parsed);
  if (!artifact)
    throw new CliError(
      `${reference} is not in the store (${store.url})`,
      EXIT.failure,
      'run `packwarden store search <words>`',
    );
  if (flags.json) {
    printJson(io, { store: { url: store.url, kind: store.kind }, artifact });
    return EXIT.ok;
  }
  const rows: Array<[string, string | undefined]> = [
    ['artifact', ref(artifact)],
    ['name', artifact.displayName],
    ['description', artifact.description],
    ['author', artifact.author],
    ['tags', artifact.tags?.join(', ')],
    ['latest', artifact.latestVersion],
    ['versions', artifact.versions?.join(', ')],
    ['updated', artifact.updatedAt],
    ['store', `${store.url} (${store.kind})`],
  ];
  for (const [label, value] of rows)
    if (value) io.stdout.write(`${label.padEnd(12)} ${safe(value)}\n`);
  return EXIT.ok;
}

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

/** `./x.tgz`, `/abs/x.tar.gz`: a file to install, never an artifact reference (`type/slug`). */
function isArchiveFileArgument(reference: string): boolean {
  return /\.(tgz|tar\.gz)$/i.test(reference) || /^(\.{1,2}\/|\/)/.test(reference);
}

/**
 * `PACKWARDEN_REQUIRE_SIGNED_PACK` with a value that is neither yes nor no is a usage error
 * (exit 2), never "off" (issue 9 W8).
 */
function requireSignedFromEnv(io: CliIo): boolean {
  try {
    return readPackwardenFlag(io.env, 'REQUIRE_SIGNED_PACK');
  } catch (error) {
    throw new CliError(
      (error as Error).message,
      EXIT.usage,
      'fix the variable, or unset it and pass --require-signed',
    );
  }
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
  const requireSigned = flags.requireSigned === true || requireSignedFromEnv(io);
  // A trust root given (flags or environment) means the signature is checked, required or not:
  // trust flags are never silently ignored (issue 9 W11).
  const loaded = await loadTrustRootOrExit(io, flags);
  const root = requireSigned || loaded.status !== 'none' ? loaded : undefined;
  // A local .tar.gz (`pack export`'s) installs through the same installPack as a store's.
  const store = local
    ? await openPackArchive(resolve(io.cwd, reference), { env: io.env })
    : await open(io, flags);
  const parsed: ArtifactRef = local
    ? { type: 'pack', slug: store.list()[0]!.slug }
    : parseArtifactRef(reference);
  const onProgress = progressReporter(io);
  let result: InstallResult;
  try {
    result = await installPack(store, parsed, {
      env: io.env,
      requireSigned,
      ...(root
        ? { selectKey: (kid: string, at: Date) => selectTrustedKey(root, kid, { at }) }
        : {}),
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
