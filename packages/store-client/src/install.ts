import { mkdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import {
  compareManifestPaths,
  digestManifest,
  DIGEST_EXCLUDED_PATH as PACK_SIGNATURE_FILE,
} from '@packwarden/pack-digest';
import {
  CURRENT_FILE,
  loadPackManifest,
  packwardenHome,
  readPackwardenFlag,
} from '@packwarden/pack-manifest';
import type { EngineVerification, KeySelector, PackVerification } from '@packwarden/pack-signature';
import { writeFileAtomic } from './cache.js';
import { abortError, isStoreError, StoreError } from './errors.js';
import { extractInto, type ExtractResult } from './extract.js';
import type { ExtractLimits } from './limits.js';
import { acquireLock } from './lock.js';
import type { ArtifactRef } from './refs.js';
import { openArchive } from './sources/index.js';
import {
  isEmptyOrMissingDir,
  makeStagingDir,
  promoteStaging,
  recoverLeftovers,
  refuseDowngrade,
  removeTree,
} from './staging.js';
import type { Env, Store } from './store.js';
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
  /** Largest archive downloaded from a store that does not state a size (AgentHippo). Default 1 GiB. */
  maxDownloadBytes?: number;
  /** No byte for this long fails the download. Default 60,000 ms. */
  idleTimeoutMs?: number;
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

const noTrustRoot: KeySelector = () => ({
  kind: 'no-trust-root',
  message:
    'no trust root was given to the installer: pass selectKey (the CLI: --keys FILE, --jwks URL --pin …)',
});

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
  };
  const requireSigned = options.requireSigned ?? requireSignedFromEnv(env);
  const signal = options.signal;
  if (ref.type !== 'pack' && ref.type !== 'engine') {
    throw new StoreError(
      'ERR_ARTIFACT_TYPE_UNSUPPORTED',
      `only packs and engines can be installed (${ref.type}/${ref.slug} is a ${ref.type}); install the pack that uses it`,
    );
  }
  const isEngine = ref.type === 'engine';
  const resolved = store.resolve(ref);
  const { slug, version } = resolved;

  // Where it goes, what is locked, which leftovers belong to it.
  let parent: string;
  let finalName: string;
  let stagingPrefix: string;
  let lockPath: string;
  const flat = options.to !== undefined;
  if (flat) {
    const target = resolve(options.to!);
    parent = dirname(target);
    finalName = basename(target);
    stagingPrefix = `.${finalName}.staging-`;
    lockPath = join(parent, `.${finalName}.lock`);
  } else {
    // Engines go where loadPackEngine finds them (engines README, "Finding the engine").
    parent = join(
      resolve(options.home ?? packwardenHome(env)),
      isEngine ? 'engines' : 'agents',
      slug,
    );
    finalName = version;
    stagingPrefix = '.staging-';
    lockPath = join(parent, '.lock');
  }
  const target = join(parent, finalName);
  const exists = async () =>
    !(await isEmptyOrMissingDir(target)) ||
    (!flat && (await stat(target).catch(() => undefined)) !== undefined);
  const refuseExisting = () =>
    flat
      ? new StoreError(
          'ERR_TARGET_NOT_EMPTY',
          `${target} exists and is not empty (use force to replace it)`,
          { subject: target },
        )
      : new StoreError(
          'ERR_ALREADY_INSTALLED',
          `${slug}@${version} is already installed in ${target} (use force to reinstall)`,
          {
            subject: target,
          },
        );
  if (!options.force && (await exists())) throw refuseExisting();

  try {
    await mkdir(parent, { recursive: true });
  } catch (cause) {
    throw new StoreError('ERR_INSTALL_IO', `cannot create ${parent}: ${(cause as Error).message}`, {
      cause,
    });
  }
  const release = await acquireLock(lockPath, {
    timeoutMs: options.lockTimeoutMs ?? 10 * 60_000,
    staleMs: 60 * 60_000,
    ...(signal ? { signal } : {}),
  });
  let staging: string | undefined;
  /**
   * An engine's checks and promotion (README "Engines"): `engine.manifest.json` (Custom Engine
   * V2) names the id asked for and `package.json` the version; the digest leaves out the root
   * `engine.sig`; a root `pack.sig` is refused (no engine digest covers it); the signature
   * checked is `engine.sig` (`verifyEngine`), under the same policy as a pack's.
   */
  const finishEngine = async (
    dir: string,
    extracted: ExtractResult,
    archiveSha256: string,
  ): Promise<InstallResult> => {
    // The engine rules live in pack-signature (one definition for signer, verifier, installer).
    const signature = await import('@packwarden/pack-signature');
    const identity = signature.readEngineIdentity(dir);
    if ('problem' in identity) {
      throw new StoreError(
        'ERR_ENGINE_INVALID',
        `${slug}@${version} is not a valid engine: ${identity.problem}`,
      );
    }
    if (identity.id !== slug || identity.version !== version) {
      throw new StoreError(
        'ERR_PACK_IDENTITY_MISMATCH',
        `the archive for engine ${slug}@${version} holds ${identity.id}@${identity.version}`,
      );
    }
    if (extracted.entries!.some((entry) => entry.path === PACK_SIGNATURE_FILE)) {
      throw new StoreError(
        'ERR_ENGINE_INVALID',
        `${slug}@${version} holds a root ${PACK_SIGNATURE_FILE}, which no engine signature covers`,
      );
    }
    const digest = digestManifest(
      extracted
        .entries!.filter((entry) => entry.path !== signature.ENGINE_SIGNATURE_FILE)
        .sort((a, b) => compareManifestPaths(a.path, b.path)),
    );
    if (resolved.source.kind === 'static') {
      if (digest !== resolved.source.digest) {
        throw new StoreError(
          'ERR_PACK_DIGEST_MISMATCH',
          `engine ${slug}@${version} has digest ${digest}, the index states ${resolved.source.digest}`,
        );
      }
      if (resolved.source.signature !== undefined) {
        const sig = await readFile(join(dir, signature.ENGINE_SIGNATURE_FILE), 'utf8').catch(
          () => undefined,
        );
        if (sig?.trim() !== resolved.source.signature.trim()) {
          throw new StoreError(
            'ERR_PACK_SIGNATURE_MISMATCH',
            `the engine.sig in the archive differs from the one the index lists`,
          );
        }
      }
    }
    let verification: EngineVerification | undefined;
    if (requireSigned || options.selectKey) {
      options.onProgress?.({ phase: 'verify' });
      verification = await signature.verifyEngine(dir, {
        selectKey: options.selectKey ?? noTrustRoot,
        expectedId: slug,
        ...(signal ? { signal } : {}),
      });
      if (requireSigned && verification.kind !== 'verified') {
        throw new StoreError(
          'ERR_SIGNATURE_REFUSED',
          `engine ${slug}@${version} was not installed: ${verification.message}`,
          { verification },
        );
      }
      if (verification.kind !== 'verified' && verification.kind !== 'unsigned') {
        throw new StoreError(
          'ERR_SIGNATURE_REFUSED',
          `engine ${slug}@${version} was not installed: its engine.sig was checked against the trust root given and did not verify: ${verification.message}`,
          { verification },
        );
      }
    }
    if (signal?.aborted) throw abortError(signal);
    return promote(dir, digest, archiveSha256, extracted, verification);
  };
  const promote = async (
    dir: string,
    digest: string,
    archiveSha256: string,
    extracted: ExtractResult,
    verification: PackVerification | EngineVerification | undefined,
  ): Promise<InstallResult> => {
    options.onProgress?.({ phase: 'install' });
    let replaced: boolean;
    try {
      ({ replaced } = await promoteStaging(dir, target));
      staging = undefined;
      if (!flat) await writeFileAtomic(join(parent, CURRENT_FILE), `${version}\n`);
    } catch (cause) {
      throw new StoreError(
        'ERR_INSTALL_IO',
        `cannot move ${slug}@${version} into place: ${(cause as Error).message}`,
        { cause },
      );
    }
    const result: InstallResult = { slug, version, dir: target, digest, replaced, archiveSha256 };
    if (verification) result.verification = verification;
    if (extracted.comment !== undefined) result.commit = extracted.comment;
    return result;
  };
  try {
    // Holding the lock: under `<home>/agents/<slug>/` (the installer's own folder) any staging or
    // set-aside folder belongs to a dead or finished run. With `to`, the parent is the caller's
    // folder: nothing there is touched but what this run creates (README "Install: layout and
    // guarantees").
    if (!flat) await recoverLeftovers(parent, stagingPrefix);
    if (!options.force && (await exists())) throw refuseExisting();
    if (!flat && !options.allowDowngrade) await refuseDowngrade(parent, slug, version);

    let extracted: ExtractResult | undefined;
    let archiveSha256 = '';
    for (let attempt = 0; attempt < 2 && !extracted; attempt++) {
      staging = await makeStagingDir(parent, stagingPrefix);
      const opened = await openArchive(
        storeContext(store),
        resolved,
        filled,
        attempt === 0,
        (bytes, total) =>
          options.onProgress?.(
            total === undefined
              ? { phase: 'download', bytes }
              : { phase: 'download', bytes, total },
          ),
      );
      try {
        options.onProgress?.({ phase: 'extract' });
        const result = await extractInto(opened.stream, staging, {
          collectEntries: true,
          ...(options.limits ? { limits: options.limits } : {}),
          ...(resolved.source.kind === 'github-tarball'
            ? { stripTopFolder: true, stripPrefix: resolved.source.folder }
            : {}),
          ...(options.onProgress
            ? { onProgress: (p) => options.onProgress!({ phase: 'extract', bytes: p.bytes }) }
            : {}),
          ...(signal ? { signal } : {}),
        });
        await opened.commit();
        archiveSha256 = opened.meter.sha256;
        extracted = result;
      } catch (error) {
        opened.stream.destroy();
        await opened.discard();
        await removeTree(staging);
        staging = undefined;
        // A cached archive that no longer matches its name is dropped and fetched again.
        const corruptCache =
          opened.fromCache &&
          isStoreError(error) &&
          (error.code === 'ERR_DOWNLOAD_INTEGRITY' || error.code === 'ERR_DOWNLOAD_SIZE_MISMATCH');
        if (!corruptCache) throw error;
      }
    }
    if (!staging || !extracted)
      throw new StoreError('ERR_DOWNLOAD_INTEGRITY', 'the archive could not be read intact');
    if (signal?.aborted) throw abortError(signal);

    // The manifest must name exactly what was asked for.
    if (isEngine) {
      return await finishEngine(staging, extracted, archiveSha256);
    }
    let manifest;
    try {
      manifest = loadPackManifest(staging).manifest;
    } catch (cause) {
      throw new StoreError(
        'ERR_PACK_INVALID',
        `${slug}@${version} has no valid agent.yaml: ${(cause as Error).message}`,
        { cause },
      );
    }
    if (manifest.metadata.name !== slug || manifest.metadata.version !== version) {
      throw new StoreError(
        'ERR_PACK_IDENTITY_MISMATCH',
        `the archive for ${slug}@${version} holds ${manifest.metadata.name}@${manifest.metadata.version}`,
      );
    }
    // Pack digest v1 of what was written, from the hashes taken while writing it (the staging
    // folder is private to this process); verifyPack recomputes it from disk when it runs.
    const digest = digestManifest(
      extracted
        .entries!.filter((entry) => entry.path !== PACK_SIGNATURE_FILE)
        .sort((a, b) => compareManifestPaths(a.path, b.path)),
    );
    if (resolved.source.kind === 'static') {
      if (digest !== resolved.source.digest) {
        throw new StoreError(
          'ERR_PACK_DIGEST_MISMATCH',
          `${slug}@${version} has digest ${digest}, the index states ${resolved.source.digest}`,
        );
      }
      if (resolved.source.signature !== undefined) {
        const sig = await readFile(join(staging, PACK_SIGNATURE_FILE), 'utf8').catch(
          () => undefined,
        );
        if (sig?.trim() !== resolved.source.signature.trim()) {
          throw new StoreError(
            'ERR_PACK_SIGNATURE_MISMATCH',
            `the pack.sig in the archive differs from the one the index lists`,
          );
        }
      }
    }

    let verification: PackVerification | undefined;
    if (requireSigned || options.selectKey) {
      options.onProgress?.({ phase: 'verify' });
      // Loaded only when a signature is checked: jose and the verifier are most of the start-up cost.
      const { verifyPack } = await import('@packwarden/pack-signature');
      verification = await verifyPack(staging, {
        selectKey: options.selectKey ?? noTrustRoot,
        ...(signal ? { signal } : {}),
      });
      if (requireSigned && verification.kind !== 'verified') {
        throw new StoreError(
          'ERR_SIGNATURE_REFUSED',
          `${slug}@${version} was not installed: ${verification.message}`,
          {
            verification,
          },
        );
      }
      // A trust root was given without the requirement: a pack without pack.sig still installs
      // (reported `unsigned`), and so does a genuine signature by a trusted key over a digest
      // whose rules are not public (`digest-unsupported`, pack-signature README: never a pass,
      // but nothing false either). A signature that does not verify, is by a key the root does
      // not trust, or cannot be checked is refused, never installed as if unchecked.
      if (
        verification.kind !== 'verified' &&
        verification.kind !== 'unsigned' &&
        verification.kind !== 'digest-unsupported'
      ) {
        throw new StoreError(
          'ERR_SIGNATURE_REFUSED',
          `${slug}@${version} was not installed: its pack.sig was checked against the trust root given and did not verify: ${verification.message}`,
          { verification },
        );
      }
    }
    if (signal?.aborted) throw abortError(signal);
    return await promote(staging, digest, archiveSha256, extracted, verification);
  } finally {
    if (staging) await removeTree(staging);
    await release();
  }
}
