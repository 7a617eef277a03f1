import { lstat, readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { PackManifestError } from './errors.js';

const MANIFEST_FILE = 'agent.yaml';

/** How deep `findPackFolders` descends below its root by default. */
export const FIND_PACKS_MAX_DEPTH = 8;
/** How many pack folders `findPackFolders` returns at most by default; more is an error. */
export const FIND_PACKS_MAX_PACKS = 10_000;
/** How many folders `findPackFolders` reads at most by default; more is an error. */
export const FIND_PACKS_MAX_FOLDERS = 100_000;

export interface FindPackFoldersOptions {
  /** Levels below the root to look in (the root is level 0). Default 8. */
  maxDepth?: number;
  /** More pack folders than this is `ERR_PACK_SEARCH_TOO_LARGE`. Default 10,000. */
  maxPacks?: number;
  /** Reading more folders than this is `ERR_PACK_SEARCH_TOO_LARGE`. Default 100,000. */
  maxFolders?: number;
}

/** `path` leads (through symlinks) to a folder holding `agent.yaml` as a regular file. */
async function isPackFolder(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory() && (await lstat(join(path, MANIFEST_FILE))).isFile();
  } catch {
    return false;
  }
}

function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/**
 * The pack folders under `root` (README "Finding packs"): every folder holding `agent.yaml` as a
 * regular file, not descending into a pack; symlinked folders are not followed, and one that
 * leads to a pack folder is `ERR_PACK_SEARCH_SYMLINK`; folders whose name starts with `.` and
 * `node_modules` are not searched. Sorted by path in byte order, so the
 * same tree gives the same list on every platform. `packwarden pack verify --all` and
 * `buildStaticStore` both use it, so a store is built from exactly the packs a verify saw.
 *
 * Fails closed: a folder that cannot be read (which could hide a pack) is `ERR_MANIFEST_IO`, and
 * a tree larger than the bounds is `ERR_PACK_SEARCH_TOO_LARGE`, never a silently shorter list.
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
  const tooLarge = (what: string) =>
    new PackManifestError('ERR_PACK_SEARCH_TOO_LARGE', `${resolve(root)} holds ${what}`, {
      file: resolve(root),
    });
  const visit = async (dir: string, depth: number): Promise<void> => {
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
      found.push(dir);
      if (found.length > maxPacks) throw tooLarge(`more than ${maxPacks} packs`);
      return;
    }
    if (depth >= maxDepth) return;
    const searched = entries.filter(
      (entry) => !entry.name.startsWith('.') && entry.name !== 'node_modules',
    );
    // A symlinked folder is not followed (it may lead anywhere, or back up the tree), but one
    // that leads to a pack folder is refused rather than left out: `pack verify --all` would
    // report every pack verified while `packwarden run <that path>` runs one it never saw.
    for (const entry of searched) {
      if (entry.isSymbolicLink() && (await isPackFolder(join(dir, entry.name)))) {
        throw new PackManifestError(
          'ERR_PACK_SEARCH_SYMLINK',
          `${join(dir, entry.name)} is a symlink to a pack folder, which the search does not follow; put the folder there, or name it on its own`,
          { file: join(dir, entry.name) },
        );
      }
    }
    const children = searched
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort(byteOrder);
    for (const name of children) await visit(join(dir, name), depth + 1);
  };
  await visit(resolve(root), 0);
  return found;
}
