import { readPackwardenFlag } from '@packwarden/pack-manifest';
import type { EngineVerification, KeySelector, PackVerification } from '@packwarden/pack-signature';
import { checkEngine, checkPack } from './artifact-checks.js';
import { resolveDownloadTimeout } from './download-deadline.js';
import { abortError, isStoreError, StoreError } from './errors.js';
import { extractInto, type ExtractResult } from './extract.js';
import { InstallTarget } from './install-target.js';
import type { ExtractLimits } from './limits.js';
import type { ArtifactRef } from './refs.js';
import { openArchive, type Opened } from './sources/index.js';
import { makeStagingDir, removeTree } from './staging.js';
import type { Env, ResolvedArtifact, Store } from './store.js';
import { storeContext } from './store-context.js';

export type InstallPhase = 'download' | 'extract' | 'verify' | 'install';

export interface InstallProgress {
  phase: InstallPhase;
  bytes?: number;
  total?: number;
}

export interface InstallPackOptions {
  /** Default `packwardenHome(env)`. */
  home?: string;
  /**
   * Extract the artifact flat into this folder instead of `<home>/agents/<slug>/<version>/`
   * (packs) or `<home>/engines/<slug>/<version>/` (engines).
   */
  to?: string;
  /** Replace an installed version (or a non-empty `to` folder). */
  force?: boolean;
  /**
   * Install a version lower than the one `current.txt` names (and switch `current.txt` to it).
   * Off by default: a store whose `latest` went backwards must not roll an install back unasked.
   */
  allowDowngrade?: boolean;
  /**
   * Refuse anything `verifyPack` does not call `verified`. Also on with
   * `PACKWARDEN_REQUIRE_SIGNED_PACK=1`; an unrecognised value of that variable is
   * `ERR_INVALID_ARGUMENT`, never "off".
   */
  requireSigned?: boolean;
  /**
   * Trusted keys (e.g. `(kid, at) => selectTrustedKey(root, kid, { at })`). Given, the pack's
   * signature is always checked: without `requireSigned` an unsigned pack installs (reported
   * `unsigned`) but a pack.sig that does not verify is `ERR_SIGNATURE_REFUSED`.
   */
  selectKey?: KeySelector;
  env?: Env;
  onProgress?: (progress: InstallProgress) => void;
  signal?: AbortSignal;
  limits?: Partial<ExtractLimits>;
  /**
   * Largest archive downloaded: an AgentHippo tarball (no size stated) stops past it, a static
   * store's archive whose index `size` is larger is refused before it is fetched. Default 1 GiB.
   */
  maxDownloadBytes?: number;
  /** No byte for this long fails the download. Default 60,000 ms. */
  idleTimeoutMs?: number;
  /**
   * The whole download (from its request to its last byte) taking longer fails it with
   * `ERR_STORE_TIMEOUT`, however steadily bytes arrive. Default 2 hours (7,200,000 ms): 1 GiB at
   * about 150 KiB/s. Not applied to local archives or the archive cache.
   */
  downloadTimeoutMs?: number;
  /** Waiting for another install of the same pack. Default 10 minutes. */
  lockTimeoutMs?: number;
}

export interface InstallResult {
  slug: string;
  version: string;
  /** The installed pack folder. */
  dir: string;
  /** Pack digest v1 of what was installed. */
  digest: string;
  /**
   * Present when a signature was checked (required, or `selectKey` given): `verifyPack`'s result
   * for a pack, `verifyEngine`'s (its `engine.sig`) for an engine.
   */
  verification?: PackVerification | EngineVerification;
  /** An existing install (same version, or `to` content) was replaced. */
  replaced: boolean;
  /** SHA-256 of the downloaded archive. */
  archiveSha256: string;
  /** The git commit of an AgentHippo tarball (its global PAX comment). */
  commit?: string;
}

/**
 * An unrecognised value of the variable is an error, never "off" (pack-manifest README,
 * `readPackwardenFlag`): reported as the caller's `ERR_INVALID_ARGUMENT`, its cause kept.
 */
function requireSignedFromEnv(env: Env): boolean {
  try {
    return readPackwardenFlag(env, 'REQUIRE_SIGNED_PACK');
  } catch (cause) {
    throw new StoreError('ERR_INVALID_ARGUMENT', (cause as Error).message, { cause });
  }
}

/**
 * Downloads, checks, extracts into a staging folder, validates, verifies when required, then
 * renames into place and switches `current.txt`. Serialised per pack by a lock; a failure leaves
 * the previous install untouched and no staging folder. Every failure is a `StoreError`: an
 * error of the operating system the steps did not name is `ERR_INSTALL_IO`.
 */
export async function installPack(
  store: Store,
  ref: ArtifactRef,
  options: InstallPackOptions = {},
): Promise<InstallResult> {
  try {
    return await installSteps(store, ref, options);
  } catch (error) {
    if (isStoreError(error)) throw error;
    throw new StoreError(
      'ERR_INSTALL_IO',
      `installing ${ref.type}/${ref.slug} failed: ${String((error as Error)?.message ?? error)}`,
      { cause: error },
    );
  }
}

/** The archive extracted into a fresh staging folder (step 3). */
interface StagedArchive {
  dir: string;
  extracted: ExtractResult;
  archiveSha256: string;
}

/**
 * Step 3: streams the archive from its store (one source per kind of store, sources/index.ts)
 * into a fresh staging folder, checking its size and SHA-256 on the way. A cached archive that no
 * longer matches its name is dropped and fetched once more. On failure no staging folder is left.
 */
async function stageArchive(
  store: Store,
  resolved: ResolvedArtifact,
  target: InstallTarget,
  options: InstallPackOptions & {
    maxDownloadBytes: number;
    idleTimeoutMs: number;
    downloadTimeoutMs: number;
  },
): Promise<StagedArchive> {
  const { onProgress, signal } = options;
  for (let attempt = 0; attempt < 2; attempt++) {
    const dir = await makeStagingDir(target.parent, target.stagingPrefix);
    let opened: Opened;
    try {
      opened = await openArchive(
        storeContext(store),
        resolved,
        options,
        attempt === 0,
        (bytes, total) =>
          onProgress?.(
            total === undefined
              ? { phase: 'download', bytes }
              : { phase: 'download', bytes, total },
          ),
      );
    } catch (error) {
      await removeTree(dir);
      throw error;
    }
    try {
      onProgress?.({ phase: 'extract' });
      const extracted = await extractInto(opened.stream, dir, {
        collectEntries: true,
        ...(options.limits ? { limits: options.limits } : {}),
        ...(resolved.source.kind === 'github-tarball'
          ? { stripTopFolder: true, stripPrefix: resolved.source.folder }
          : {}),
        ...(onProgress
          ? { onProgress: (p) => onProgress({ phase: 'extract', bytes: p.bytes }) }
          : {}),
        ...(signal ? { signal } : {}),
      });
      await opened.commit();
      return { dir, extracted, archiveSha256: opened.meter.sha256 };
    } catch (error) {
      opened.stream.destroy();
      await opened.discard();
      await removeTree(dir);
      const corruptCache =
        opened.fromCache &&
        isStoreError(error) &&
        (error.code === 'ERR_DOWNLOAD_INTEGRITY' || error.code === 'ERR_DOWNLOAD_SIZE_MISMATCH');
      if (!corruptCache) throw error;
    }
  }
  throw new StoreError('ERR_DOWNLOAD_INTEGRITY', 'the archive could not be read intact');
}

/**
 * A static store's `size` is the download's only bound, and the store writes it: an index
 * claiming a terabyte, serving gzip members that inflate to nothing (no tar byte, so no ratio or
 * tar bound ever fires), would stream into the archive cache until the disk is full. The claim is
 * held to `maxDownloadBytes` before anything is locked, staged or fetched.
 */
function refuseOversizedArchive(resolved: ResolvedArtifact, maxDownloadBytes: number): void {
  const { source } = resolved;
  if (source.kind !== 'static' || source.size <= maxDownloadBytes) return;
  throw new StoreError(
    'ERR_DOWNLOAD_TOO_LARGE',
    `${resolved.slug}@${resolved.version}: the index states a ${source.size}-byte archive, more than maxDownloadBytes (${maxDownloadBytes}); nothing was downloaded`,
    { subject: source.url.href },
  );
}

/** The steps of README "Install: layout and guarantees", in order; see `installPack`. */
async function installSteps(
  store: Store,
  ref: ArtifactRef,
  options: InstallPackOptions,
): Promise<InstallResult> {
  const env = options.env ?? storeContext(store).env;
  const filled = {
    ...options,
    maxDownloadBytes: options.maxDownloadBytes ?? 1024 * 1024 * 1024,
    idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
    downloadTimeoutMs: resolveDownloadTimeout(options.downloadTimeoutMs),
  };
  const requireSigned = options.requireSigned ?? requireSignedFromEnv(env);
  const signal = options.signal;
  if (ref.type !== 'pack' && ref.type !== 'engine') {
    throw new StoreError(
      'ERR_ARTIFACT_TYPE_UNSUPPORTED',
      `only packs and engines can be installed (${ref.type}/${ref.slug} is a ${ref.type}); install the pack that uses it`,
    );
  }
  const resolved = store.resolve(ref);
  refuseOversizedArchive(resolved, filled.maxDownloadBytes);
  const { slug, version } = resolved;
  const target = InstallTarget.of({ type: ref.type, slug, version }, options, env);
  await target.refuseTaken(options.force);
  const release = await target.lock(options);
  let staging: string | undefined;
  try {
    await target.prepare(options);
    const staged = await stageArchive(store, resolved, target, filled);
    staging = staged.dir;
    if (signal?.aborted) throw abortError(signal);
    // The manifest must name exactly what was asked for; then digest and signature.
    const check = ref.type === 'engine' ? checkEngine : checkPack;
    const { digest, verification } = await check({
      dir: staged.dir,
      entries: staged.extracted.entries!,
      resolved,
      requireSigned,
      selectKey: options.selectKey,
      signal,
      onVerify: () => options.onProgress?.({ phase: 'verify' }),
    });
    if (signal?.aborted) throw abortError(signal);
    options.onProgress?.({ phase: 'install' });
    const replaced = await target.promote(staged.dir, options.force);
    staging = undefined;
    const result: InstallResult = {
      slug,
      version,
      dir: target.dir,
      digest,
      replaced,
      archiveSha256: staged.archiveSha256,
    };
    if (verification) result.verification = verification;
    if (staged.extracted.comment !== undefined) result.commit = staged.extracted.comment;
    return result;
  } finally {
    if (staging) await removeTree(staging);
    await release();
  }
}
