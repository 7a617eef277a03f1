import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  assertLockEntryMatches,
  installPack,
  isStoreError,
  openPackArchive,
  parseArtifactRef,
  resolvePackArtifact,
  writeLockfile,
  type ArtifactRef,
  type InstallResult,
  type LockEntry,
  type LockObservation,
  type Store,
} from '@packwarden/store-client';
import { CliError, EXIT } from '../../errors.js';
import { printJson, terminalSafe as safe, type CliIo } from '../../io.js';
import type { InstallFlags } from '../../shared/install-options.js';
import { loadLock } from '../../shared/lockfile.js';
import { installPolicy } from '../../shared/trust.js';
import { installFromOci, isOciArgument } from './oci.js';
import { isArchiveFileArgument, openStoreAt } from './source.js';

/** What a source offers now, compared with a lock entry before installing. */
type Observed = LockObservation;

export interface LockFlags extends InstallFlags {
  lock?: string;
  frozen?: boolean;
}

function signerOf(result: InstallResult): string | null {
  return result.verification?.kind === 'verified' ? result.verification.kid : null;
}

/** What a store offers now for `ref`, in the lock's terms; a store without archive digests cannot be pinned. */
function observeStore(store: Store, ref: ArtifactRef): Observed {
  const { source } = store.resolve(ref);
  if (source.kind === 'github-tarball')
    throw new CliError(
      `${ref.type}/${ref.slug}: this store publishes no archive digests, so a frozen install cannot pin its bytes`,
      EXIT.failure,
      'use a static store (packwarden store build) or an OCI registry',
    );
  return {
    resolved: source.url.href,
    archiveSha256: source.sha256,
    ...(source.kind === 'static' ? { packDigest: source.digest } : {}),
  };
}

/** One store (or local archive) install, returning what the lock records. */
async function installFromStore(
  io: CliIo,
  store: Store,
  ref: ArtifactRef,
  flags: LockFlags,
  to: string | undefined,
  check?: (entry: Observed) => void,
): Promise<{ key: string; entry: LockEntry; result: InstallResult }> {
  const resolved = store.resolve(ref);
  const { source } = resolved;
  // A frozen install compares before anything is downloaded or installed; installPack then
  // holds the bytes to the index's sha256 and digest (store-client README "Static stores").
  if (check) check(observeStore(store, ref));
  const result = await installPack(
    store,
    { ...ref, version: resolved.version },
    {
      env: io.env,
      ...(await installPolicy(io, flags)),
      ...(flags.force ? { force: true } : {}),
      ...(flags.allowDowngrade ? { allowDowngrade: true } : {}),
      ...(to === undefined ? {} : { to: resolve(io.cwd, to) }),
    },
  );
  const entry: LockEntry = {
    version: result.version,
    source: store.url,
    resolved: source.url.href,
    archiveSha256: result.archiveSha256,
    packDigest: result.digest,
    signer: signerOf(result),
  };
  return { key: `${resolved.type}/${resolved.slug}`, entry, result };
}

async function installFromOciLocked(
  io: CliIo,
  reference: string,
  flags: LockFlags,
  to: string | undefined,
  check?: (entry: Observed) => void,
): Promise<{ key: string; entry: LockEntry; result: InstallResult }> {
  const { result, artifact } = await installFromOci(io, reference, flags, to, (pulled) =>
    check?.({
      resolved: pulled.reference,
      archiveSha256: pulled.layer.digest.replace(/^sha256:/, ''),
      packDigest: pulled.meta.digest,
      name: pulled.meta.name,
      version: pulled.meta.version,
    }),
  );
  const entry: LockEntry = {
    version: result.version,
    source: artifact.reference.replace(/@sha256:[0-9a-f]{64}$/, ''),
    resolved: artifact.reference,
    archiveSha256: result.archiveSha256,
    packDigest: result.digest,
    signer: signerOf(result),
  };
  return { key: `pack/${result.slug}`, entry, result };
}

/**
 * `store install … --lock FILE` records what was installed; `store install --frozen --lock FILE
 * [ref]` installs exactly what the lock lists (every entry, or the one `ref` names), refusing an
 * entry whose bytes or digests differ now before anything of it is installed
 * (store-client README "Lockfile").
 */
export async function lockedInstall(
  io: CliIo,
  reference: string | undefined,
  flags: LockFlags,
  to?: string,
): Promise<number> {
  if (flags.lock === undefined) throw new CliError('--frozen needs --lock FILE', EXIT.usage);
  const file = resolve(io.cwd, flags.lock);
  const installed: Array<{ key: string; entry: LockEntry; result: InstallResult }> = [];
  if (!flags.frozen) {
    if (reference === undefined) throw new CliError('name what to install', EXIT.usage);
    const lock = await loadLock(file, false);
    let done;
    if (isOciArgument(reference)) done = await installFromOciLocked(io, reference, flags, to);
    else if (isArchiveFileArgument(reference)) {
      if (flags.store !== undefined)
        throw new CliError(`${reference} is a local archive: it takes no --store`, EXIT.usage);
      const store = await openPackArchive(resolve(io.cwd, reference), { env: io.env });
      done = await installFromStore(
        io,
        store,
        { type: 'pack', slug: store.list()[0]!.slug },
        flags,
        to,
      );
    } else {
      const store = await openStoreAt(io, flags.store);
      done = await installFromStore(io, store, parseArtifactRef(reference), flags, to);
    }
    lock.packs[done.key] = done.entry;
    await writeLockfile(file, lock);
    installed.push(done);
  } else {
    const lock = await loadLock(file, true);
    let keys = Object.keys(lock.packs).sort();
    if (reference !== undefined) {
      const wanted = parseArtifactRef(reference.includes('/') ? reference : `pack/${reference}`);
      keys = keys.filter((key) => key === `${wanted.type}/${wanted.slug}`);
      if (keys.length === 0)
        throw new CliError(
          `${reference} is not in ${file}`,
          EXIT.failure,
          'install it with --lock first',
        );
    }
    const ociOptions = { env: io.env, ...(flags.plainHttp ? { plainHttp: true } : {}) };
    const openLocked = (locked: LockEntry) =>
      locked.source.startsWith('file:') && /\.(tgz|tar\.gz)$/i.test(locked.source)
        ? openPackArchive(fileURLToPath(locked.source), { env: io.env })
        : openStoreAt(io, locked.source);
    // Two passes: every entry is compared with what its source offers now before any entry is
    // installed, so one refused entry leaves every installed pack as it was; the install pass
    // compares again (a source can change in between).
    for (const pass of ['check', 'install'] as const) {
      for (const key of keys) {
        const locked = lock.packs[key]!;
        const check = (now: Observed) => assertLockEntryMatches(key, locked, now);
        if (isOciArgument(locked.source)) {
          if (pass === 'check') {
            // A tag named after the version that now points elsewhere is a moved tag: refused,
            // even though the recorded digest would still install (README "Lockfile").
            let current;
            try {
              current = await resolvePackArtifact(`${locked.source}:${locked.version}`, ociOptions);
            } catch (error) {
              if (!(isStoreError(error) && error.code === 'ERR_OCI_NOT_FOUND')) throw error;
            }
            if (current) check({ resolved: current.reference });
            const pinned = await resolvePackArtifact(locked.resolved, ociOptions);
            // The pinned manifest must be this entry's pack at this version, not another
            // artifact whose digests the lock was edited to match.
            check({
              resolved: pinned.reference,
              archiveSha256: pinned.layer.digest.replace(/^sha256:/, ''),
              packDigest: pinned.meta.digest,
              name: pinned.meta.name,
              version: pinned.meta.version,
            });
          } else installed.push(await installFromOciLocked(io, locked.resolved, flags, to, check));
        } else {
          const ref = parseArtifactRef(`${key}@${locked.version}`);
          const store = await openLocked(locked);
          if (pass === 'check') check(observeStore(store, ref));
          else installed.push(await installFromStore(io, store, ref, flags, to, check));
        }
      }
    }
  }
  if (flags.json) {
    printJson(io, {
      lock: file,
      installed: installed.map(({ key, entry, result }) => ({ key, entry, installed: result })),
    });
    return EXIT.ok;
  }
  for (const { key, entry, result } of installed)
    io.stdout.write(
      `installed ${safe(key)}@${safe(entry.version)} into ${safe(result.dir)}\n  resolved ${safe(entry.resolved)}\n  digest ${entry.packDigest}\n`,
    );
  io.stdout.write(`${flags.frozen ? 'checked against' : 'recorded in'} ${safe(file)}\n`);
  return EXIT.ok;
}
