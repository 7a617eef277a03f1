import { mkdir, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { CURRENT_FILE, packwardenHome } from '@packwarden/pack-manifest';
import { writeFileAtomic } from '@packwarden/pack-manifest/fs';
import { isStoreError, StoreError } from './errors.js';
import { acquireLock } from './lock.js';
import {
  isEmptyOrMissingDir,
  promoteStaging,
  recoverLeftovers,
  refuseDowngrade,
} from './staging.js';
import type { Env } from './store.js';

/**
 * Where one install goes (README "Install: layout and guarantees"): the folder, its lock, its
 * staging folders and `current.txt`, for a versioned install under the home or a flat one into
 * `to`. The same for every kind of store and both artifact types.
 */
export class InstallTarget {
  /** The installed folder. */
  readonly dir: string;

  private constructor(
    /** `to` was given: no `current.txt`, no downgrade check, no leftovers cleared. */
    readonly flat: boolean,
    /** The folder holding `dir`, its lock and its staging folders. */
    readonly parent: string,
    readonly stagingPrefix: string,
    private readonly lockPath: string,
    finalName: string,
    private readonly slug: string,
    private readonly version: string,
  ) {
    this.dir = join(parent, finalName);
  }

  /**
   * `<home>/agents/<slug>/<version>/` for a pack, `<home>/engines/<slug>/<version>/` for an
   * engine (where loadPackEngine finds it: engines README, "Finding the engine"), or flat `to`.
   */
  static of(
    artifact: { type: 'pack' | 'engine'; slug: string; version: string },
    options: { to?: string | undefined; home?: string | undefined },
    env: Env,
  ): InstallTarget {
    const { slug, version } = artifact;
    if (options.to !== undefined) {
      const target = resolve(options.to);
      const parent = dirname(target);
      const name = basename(target);
      return new InstallTarget(
        true,
        parent,
        `.${name}.staging-`,
        join(parent, `.${name}.lock`),
        name,
        slug,
        version,
      );
    }
    const home = resolve(options.home ?? packwardenHome(env));
    const parent = join(home, artifact.type === 'engine' ? 'engines' : 'agents', slug);
    return new InstallTarget(
      false,
      parent,
      '.staging-',
      join(parent, '.lock'),
      version,
      slug,
      version,
    );
  }

  /** Refuses, unless `force`, a non-empty flat target or any existing versioned install. */
  async refuseTaken(force: boolean | undefined): Promise<void> {
    if (force) return;
    const taken =
      !(await isEmptyOrMissingDir(this.dir)) ||
      (!this.flat && (await stat(this.dir).catch(() => undefined)) !== undefined);
    if (taken) throw this.takenError();
  }

  private takenError(): StoreError {
    return this.flat
      ? new StoreError(
          'ERR_TARGET_NOT_EMPTY',
          `${this.dir} exists and is not empty (use force to replace it)`,
          { subject: this.dir },
        )
      : new StoreError(
          'ERR_ALREADY_INSTALLED',
          `${this.slug}@${this.version} is already installed in ${this.dir} (use force to reinstall)`,
          { subject: this.dir },
        );
  }

  /** Creates the parent folder and takes the install lock; resolves to its release. */
  async lock(options: {
    lockTimeoutMs?: number | undefined;
    signal?: AbortSignal | undefined;
  }): Promise<() => Promise<void>> {
    try {
      await mkdir(this.parent, { recursive: true });
    } catch (cause) {
      throw new StoreError(
        'ERR_INSTALL_IO',
        `cannot create ${this.parent}: ${(cause as Error).message}`,
        { cause },
      );
    }
    return acquireLock(this.lockPath, {
      timeoutMs: options.lockTimeoutMs ?? 10 * 60_000,
      staleMs: 60 * 60_000,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  /**
   * Run holding the lock, before anything is downloaded (steps 1–2): under
   * `<home>/agents/<slug>/` (the installer's own folder) any staging or set-aside folder belongs
   * to a dead or finished run. With `to`, the parent is the caller's folder: nothing there is
   * touched but what this run creates.
   */
  async prepare(options: {
    force?: boolean | undefined;
    allowDowngrade?: boolean | undefined;
  }): Promise<void> {
    if (!this.flat) await recoverLeftovers(this.parent, this.stagingPrefix);
    await this.refuseTaken(options.force);
    if (!this.flat && !options.allowDowngrade) {
      await refuseDowngrade(this.parent, this.slug, this.version);
    }
  }

  /**
   * Step 6: renames `staging` into place (with `force`, an existing install set aside, then
   * removed; without it, a target that another process filled since step 2 is refused as it
   * would have been then, and left as it is), then switches `current.txt`. Resolves whether an
   * install was replaced.
   */
  async promote(staging: string, force: boolean | undefined): Promise<boolean> {
    try {
      const { replaced } = await promoteStaging(staging, this.dir, {
        replace: force === true,
        taken: () => this.takenError(),
      });
      if (!this.flat)
        await writeFileAtomic(join(this.parent, CURRENT_FILE), `${this.version}\n`, {
          mode: 0o644,
          syncFolder: true,
        });
      return replaced;
    } catch (cause) {
      if (isStoreError(cause)) throw cause;
      throw new StoreError(
        'ERR_INSTALL_IO',
        `cannot move ${this.slug}@${this.version} into place: ${(cause as Error).message}`,
        { cause },
      );
    }
  }
}
