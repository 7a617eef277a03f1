import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, readdir, rename, rm, rmdir, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { CURRENT_FILE, isSemver } from '@packwarden/pack-manifest';
import { isAtomicWriteTemporary } from '@packwarden/pack-manifest/fs';
import { StoreError } from './errors.js';
import { compareSemver } from './semver.js';
import { readSmallFile } from './small-file.js';

/** `current.txt` holds one version (at most 256 characters) and a newline. */
const CURRENT_FILE_MAX_BYTES = 1024;

// The staging folder and its promotion: the same for every kind of store and every artifact
// type (README "Install: layout and guarantees").

/** A fresh, private staging folder next to `target` (so that the final rename stays on one filesystem). */
export async function makeStagingDir(parent: string, prefix: string): Promise<string> {
  await mkdir(parent, { recursive: true });
  const path = join(parent, `${prefix}${randomBytes(6).toString('hex')}`);
  await mkdir(path, { mode: 0o700 });
  return path;
}

export async function isEmptyOrMissingDir(path: string): Promise<boolean> {
  try {
    return (await readdir(path)).length === 0;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return true;
    if (code === 'ENOTDIR') return false;
    throw error;
  }
}

/** What `promoteStaging` may do with what it finds at `target`. */
export interface PromoteOptions {
  /**
   * `force`: an existing `target` is moved aside first and removed after. Otherwise only a
   * missing or empty folder (or a symlink, which is removed, never followed) is replaced.
   */
  replace: boolean;
  /** The refusal when `target` is taken and `replace` is off. */
  taken: () => StoreError;
}

const TAKEN_CODES = new Set(['ENOTEMPTY', 'EEXIST', 'ENOTDIR', 'EISDIR']);

function isTaken(error: unknown): boolean {
  return TAKEN_CODES.has((error as NodeJS.ErrnoException)?.code ?? '');
}

/**
 * Without `replace`, `target` is judged again at the rename itself: it was only checked when the
 * install started, and whatever another process put there since is not this install's to delete.
 * An empty folder is removed with `rmdir`, which refuses one that is not empty, and the rename of
 * a folder cannot replace a folder that is not empty either, so the verdict holds up to the rename.
 */
async function clearEmptyTarget(target: string, options: PromoteOptions): Promise<void> {
  try {
    await rmdir(target);
    return;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return;
    if (code !== 'ENOTDIR') throw isTaken(error) ? options.taken() : error;
  }
  // Not a folder: a symlink (to an empty folder, as the first check saw) goes, a file stays.
  const info = await lstat(target).catch(() => undefined);
  if (!info?.isSymbolicLink()) throw options.taken();
  await unlink(target);
}

/**
 * Swaps `staging` into `target`. With `replace`, a previous `target` is moved aside first and
 * removed after; without it, a `target` that is not a missing or empty folder (now, not only when
 * the install started) is `options.taken()`, and nothing of it is touched.
 */
export async function promoteStaging(
  staging: string,
  target: string,
  options: PromoteOptions,
): Promise<{ replaced: boolean }> {
  await chmod(staging, 0o755);
  if (!options.replace) {
    await clearEmptyTarget(target, options);
    try {
      await rename(staging, target);
    } catch (error) {
      throw isTaken(error) ? options.taken() : error;
    }
    return { replaced: false };
  }
  const aside = join(dirname(target), `.${basename(target)}.old-${randomBytes(6).toString('hex')}`);
  let replaced = false;
  try {
    await rename(target, aside);
    replaced = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  try {
    await rename(staging, target);
  } catch (error) {
    if (replaced) await rename(aside, target).catch(() => undefined);
    throw error;
  }
  if (replaced) await rm(aside, { recursive: true, force: true });
  return { replaced };
}

/** Removes a folder this package created, retrying the transient errors; never throws. */
export async function removeTree(path: string): Promise<void> {
  await rm(path, { recursive: true, force: true, maxRetries: 3, retryDelay: 20 }).catch(
    () => undefined,
  );
}

const ASIDE = /^\.(.+)\.old-[0-9a-f]{12}$/;

/**
 * Run while holding the lock: whatever an earlier, killed run left here is ours to clear.
 * Staging folders and temp files go; a previous version that was moved aside for `force` and
 * never replaced (killed between the two renames) is put back, never deleted.
 */
export async function recoverLeftovers(parent: string, stagingPrefix: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const path = join(parent, name);
    const aside = ASIDE.exec(name);
    if (aside) {
      const original = join(parent, aside[1]!);
      const taken = await stat(original).then(
        () => true,
        () => false,
      );
      if (taken) await rm(path, { recursive: true, force: true });
      else await rename(path, original).catch(() => undefined);
    } else if (
      name.startsWith(stagingPrefix) ||
      isAtomicWriteTemporary(name, CURRENT_FILE) ||
      // Earlier releases named the temporary file `current.txt.tmp-<12 hex>`.
      name.startsWith(`${CURRENT_FILE}.tmp-`)
    ) {
      await rm(path, { recursive: true, force: true });
    }
  }
}

/**
 * Run while holding the lock, before anything is downloaded: `current.txt` names the version in
 * use, and installing a lower one would switch it back. A `current.txt` that cannot be read as a
 * version cannot show the install is not a downgrade, so it refuses too (fail closed).
 */
export async function refuseDowngrade(
  parent: string,
  slug: string,
  version: string,
): Promise<void> {
  // The state folder may be hostile: no symlink followed, no FIFO waited on, nothing large read.
  // What is not a small regular file cannot name a version, and is refused below.
  const read = readSmallFile(join(parent, CURRENT_FILE), CURRENT_FILE_MAX_BYTES);
  if (!read.ok && read.kind === 'absent') return;
  if (!read.ok && read.kind === 'failed') {
    throw new StoreError(
      'ERR_INSTALL_IO',
      `cannot read ${join(parent, CURRENT_FILE)}: ${read.problem}`,
      { cause: read.cause },
    );
  }
  const current = read.ok ? read.bytes.toString('utf8').trim() : '';
  const hint = 'pass allowDowngrade (the CLI: --allow-downgrade) to install it anyway';
  if (current.length > 256 || !isSemver(current)) {
    throw new StoreError(
      'ERR_DOWNGRADE_REFUSED',
      `${slug}@${version} was not installed: ${CURRENT_FILE} does not name a version, so a downgrade cannot be ruled out; ${hint}`,
      { subject: join(parent, CURRENT_FILE) },
    );
  }
  if (compareSemver(version, current) < 0) {
    throw new StoreError(
      'ERR_DOWNGRADE_REFUSED',
      `${slug}@${version} is older than the installed ${slug}@${current}: a downgrade was refused; ${hint}`,
      { subject: join(parent, CURRENT_FILE) },
    );
  }
}
