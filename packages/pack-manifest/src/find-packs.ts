import { readdir, realpath, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { PackManifestError } from './errors.js';

const MANIFEST_FILE = 'agent.yaml';

/** How deep below its root `findPackFolders` accepts a pack folder by default. */
export const FIND_PACKS_MAX_DEPTH = 8;
/** How many pack folders `findPackFolders` returns at most by default; more is an error. */
export const FIND_PACKS_MAX_PACKS = 10_000;
/** How many folders `findPackFolders` reads at most by default; more is an error. */
export const FIND_PACKS_MAX_FOLDERS = 100_000;

export interface FindPackFoldersOptions {
  /**
   * Levels below the root a pack folder may lie (the root is level 0); a deeper one is
   * `ERR_PACK_SEARCH_TOO_LARGE`. Default 8.
   */
  maxDepth?: number;
  /** More pack folders than this is `ERR_PACK_SEARCH_TOO_LARGE`. Default 10,000. */
  maxPacks?: number;
  /** Reading more folders than this is `ERR_PACK_SEARCH_TOO_LARGE`. Default 100,000. */
  maxFolders?: number;
}

function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/**
 * The pack folders under `root` (README "Finding packs"): every folder holding `agent.yaml` as a
 * regular file, not descending into a pack; folders whose name starts with `.` and
 * `node_modules` are not searched. Sorted by path in byte order, so the same tree gives the same
 * list on every platform. `packwarden pack verify --all` and `buildStaticStore` both use it, so a
 * store is built from exactly the packs a verify saw.
 *
 * Fails closed, never a silently shorter list: a folder that cannot be read (which could hide a
 * pack) is `ERR_MANIFEST_IO`; a tree larger than the bounds, or a pack deeper than `maxDepth`, is
 * `ERR_PACK_SEARCH_TOO_LARGE`; a symlinked folder is not listed from, but one through which a
 * pack folder can be reached (itself a pack, or holding one however deep) is
 * `ERR_PACK_SEARCH_SYMLINK`.
 */
export async function findPackFolders(
  root: string,
  options: FindPackFoldersOptions = {},
): Promise<string[]> {
  const maxDepth = options.maxDepth ?? FIND_PACKS_MAX_DEPTH;
  const maxPacks = options.maxPacks ?? FIND_PACKS_MAX_PACKS;
  const maxFolders = options.maxFolders ?? FIND_PACKS_MAX_FOLDERS;
  const found: string[] = [];
  let folders = 0;
  // Real paths of the symlinked folders searched through, so that a symlink loop ends.
  const linkedSearched = new Set<string>();
  const tooLarge = (what: string) =>
    new PackManifestError('ERR_PACK_SEARCH_TOO_LARGE', `${resolve(root)} holds ${what}`, {
      file: resolve(root),
    });
  /**
   * `via` is the first symlink on the way to `dir`, if any: a pack found there is refused. A pack
   * below `maxDepth` is refused too: stopping at `maxDepth` left it out of `pack verify --all`
   * while `packwarden run <its path>` ran it.
   */
  const visit = async (dir: string, depth: number, via: string | undefined): Promise<void> => {
    folders += 1;
    if (folders > maxFolders) throw tooLarge(`more than ${maxFolders} folders`);
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (cause) {
      throw new PackManifestError(
        'ERR_MANIFEST_IO',
        `cannot read ${dir}: ${(cause as Error).message}`,
        { file: dir, cause },
      );
    }
    if (entries.some((entry) => entry.name === MANIFEST_FILE && entry.isFile())) {
      if (via !== undefined) {
        throw new PackManifestError(
          'ERR_PACK_SEARCH_SYMLINK',
          `${via} is a symlink to a pack folder${dir === via ? '' : ` or a folder holding one (${dir})`}, which the search does not follow; put the folder there, or name it on its own`,
          { file: via },
        );
      }
      if (depth > maxDepth) {
        throw tooLarge(
          `a pack folder more than ${maxDepth} levels down (${dir}); search from a folder nearer to it`,
        );
      }
      found.push(dir);
      if (found.length > maxPacks) throw tooLarge(`more than ${maxPacks} packs`);
      return;
    }
    const searched = entries
      .filter((entry) => !entry.name.startsWith('.') && entry.name !== 'node_modules')
      .sort((a, b) => byteOrder(a.name, b.name));
    for (const entry of searched) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        await visit(path, depth + 1, via);
      } else if (entry.isSymbolicLink()) {
        // Not followed into the list (it may lead anywhere, or back up the tree), but searched
        // for packs: `pack verify --all` would report every pack verified while `packwarden run
        // <a path through it>` ran one it never saw.
        const target = await linkedFolder(path);
        if (target === undefined || linkedSearched.has(target)) continue;
        linkedSearched.add(target);
        await visit(path, depth + 1, via ?? path);
      }
    }
  };
  await visit(resolve(root), 0, undefined);
  return found;
}

/** The real path of the folder the symlink `path` leads to, or undefined when it leads to none. */
async function linkedFolder(path: string): Promise<string | undefined> {
  try {
    if (!(await stat(path)).isDirectory()) return undefined;
    return await realpath(path);
  } catch {
    return undefined;
  }
}
