import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { PackManifestError } from './errors.js';
import { typedEntry, type TypedEntry } from './typed-entry.js';

const MANIFEST_FILE = 'agent.yaml';

type Entry = TypedEntry;

/** How deep below its root `findPackFolders` accepts a pack folder by default. */
export const FIND_PACKS_MAX_DEPTH = 8;
/** How many pack folders `findPackFolders` returns at most by default; more is an error. */
export const FIND_PACKS_MAX_PACKS = 10_000;
/** How many folders `findPackFolders` reads at most by default; more is an error. */
export const FIND_PACKS_MAX_FOLDERS = 100_000;

export interface FindPackFoldersOptions {
  /**
   * Levels below the root a pack folder may lie (the root is level 0); a deeper one is
   * `ERR_PACK_SEARCH_TOO_LARGE`. Through a symlinked folder, also how deep the search reads
   * (levels counted from the root, through the link): a folder below it is
   * `ERR_PACK_SEARCH_TOO_LARGE`. Default 8.
   */
  maxDepth?: number;
  /** More pack folders than this is `ERR_PACK_SEARCH_TOO_LARGE`. Default 10,000. */
  maxPacks?: number;
  /** Reading more folders than this is `ERR_PACK_SEARCH_TOO_LARGE`. Default 100,000. */
  maxFolders?: number;
}

interface Search {
  /** The root as given, resolved: listed paths start with it. */
  readonly root: string;
  /** The root's real path, to tell which link targets the direct walk already covers. */
  readonly realRoot: string;
  readonly maxDepth: number;
  readonly maxPacks: number;
  readonly maxFolders: number;
  readonly found: string[];
  folders: number;
  /** Real paths read through symlinks: each is read once, so loops and repeated links end. */
  readonly readThroughLinks: Set<string>;
  readonly packFolderCache: Map<string, Promise<boolean>>;
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
 * `ERR_PACK_SEARCH_TOO_LARGE`. Symlinked folders are never listed from; one whose target the
 * direct walk already searches is skipped, any other is searched (see `followLink`).
 */
export async function findPackFolders(
  root: string,
  options: FindPackFoldersOptions = {},
): Promise<string[]> {
  const start = resolve(root);
  const search: Search = {
    root: start,
    // An unreadable root fails in the first readdir, with the error that names it.
    realRoot: await realpath(start).catch(() => start),
    maxDepth: options.maxDepth ?? FIND_PACKS_MAX_DEPTH,
    maxPacks: options.maxPacks ?? FIND_PACKS_MAX_PACKS,
    maxFolders: options.maxFolders ?? FIND_PACKS_MAX_FOLDERS,
    found: [],
    folders: 0,
    readThroughLinks: new Set(),
    packFolderCache: new Map(),
  };
  await walk(search, start, 0);
  return search.found;
}

/**
 * The direct walk: real folders under the root, listed from. A pack below `maxDepth` is refused
 * rather than left out: stopping there left it out of `pack verify --all` while `packwarden run
 * <its path>` ran it.
 */
async function walk(search: Search, dir: string, depth: number): Promise<void> {
  const entries = await readFolder(search, dir, undefined);
  if (holdsManifest(entries)) {
    if (depth > search.maxDepth) {
      throw tooLarge(
        search,
        `a pack folder more than ${search.maxDepth} levels down (${dir}); search from a folder nearer to it`,
      );
    }
    search.found.push(dir);
    if (search.found.length > search.maxPacks) {
      throw tooLarge(search, `more than ${search.maxPacks} packs`);
    }
    return;
  }
  for (const entry of searchedEntries(entries)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await walk(search, path, depth + 1);
    else if (entry.isSymbolicLink()) await followLink(search, path, depth + 1, path);
  }
}

/**
 * A symlink met at `path` (`via` is the first symlink on the way there). Not listed from: it may
 * lead anywhere, or back up the tree. But `pack verify --all` must not report every pack checked
 * while `packwarden run <a path through it>` runs one it never saw, so:
 * - a link to a folder the direct walk searches (the root, or a folder inside it that is not in a
 *   dot folder, `node_modules` or a pack) is skipped: every pack there is listed or refused by
 *   the direct walk. A link straight to a pack folder is still refused, as it always was;
 * - any other folder (outside the root, an ancestor of it, or hidden inside it) is read like the
 *   direct walk, within the same bounds, and a pack there is `ERR_PACK_SEARCH_SYMLINK`.
 */
async function followLink(search: Search, path: string, depth: number, via: string): Promise<void> {
  const target = await linkedFolder(path);
  if (target === undefined) return;
  if (await coveredByWalk(search, target)) {
    if (await isPackFolder(search, target)) throw linkedPack(via, path);
    return;
  }
  await readThroughLink(search, path, target, depth, via);
}

/**
 * A folder reached through the symlink `via`, at `path` (its real path is `real`). Its packs are
 * refused, never listed. The depth bound holds here as in the direct walk, but reading stops at
 * it and refuses: a pack deeper down would be both unlisted and runnable, and walking on would
 * read all of whatever the link points at (`/`, a mounted data set).
 */
async function readThroughLink(
  search: Search,
  path: string,
  real: string,
  depth: number,
  via: string,
): Promise<void> {
  if (search.readThroughLinks.has(real)) return;
  search.readThroughLinks.add(real);
  if (depth > search.maxDepth) {
    throw tooLarge(
      search,
      `${via}, a symlink to a folder holding folders more than ${search.maxDepth} levels down (${path}), which the search does not read through a symlink; point the link at a smaller folder, remove it, or search from a folder that does not hold it`,
    );
  }
  const entries = await readFolder(search, path, via);
  if (holdsManifest(entries)) throw linkedPack(via, path);
  for (const entry of searchedEntries(entries)) {
    const child = join(path, entry.name);
    if (entry.isDirectory()) {
      const childReal = join(real, entry.name);
      // An ancestor of the root leads back into it (`up -> ..`): that part is the direct walk's.
      if (await coveredByWalk(search, childReal)) continue;
      await readThroughLink(search, child, childReal, depth + 1, via);
    } else if (entry.isSymbolicLink()) {
      await followLink(search, child, depth + 1, via);
    }
  }
}

async function readFolder(search: Search, dir: string, via: string | undefined): Promise<Entry[]> {
  search.folders += 1;
  if (search.folders > search.maxFolders) {
    throw tooLarge(
      search,
      `more than ${search.maxFolders} folders${via === undefined ? '' : ` (counting those read through the symlink ${via})`}`,
    );
  }
  try {
    // An entry readdir gives no type (DT_UNKNOWN) would look like neither a folder nor a file:
    // a pack there would be left out without a word (typed-entry.ts).
    return (await readdir(dir, { withFileTypes: true })).map((entry) => typedEntry(dir, entry));
  } catch (cause) {
    const through =
      via === undefined
        ? ''
        : ` (reached through the symlink ${via}, which the search reads for packs it would leave out)`;
    throw new PackManifestError(
      'ERR_MANIFEST_IO',
      `cannot read ${dir}${through}: ${(cause as Error).message}`,
      { file: via ?? dir, cause },
    );
  }
}

/**
 * Whether the direct walk reads the real folder `real`: the root or a folder inside it, with no
 * dot folder or `node_modules` on the way and no pack folder above it (the walk does not descend
 * into packs). A link into a hidden folder or into a pack would show what the walk never saw.
 */
async function coveredByWalk(search: Search, real: string): Promise<boolean> {
  const rel = relative(search.realRoot, real);
  if (rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return false;
  const segments = rel === '' ? [] : rel.split(sep);
  if (segments.some((name) => name.startsWith('.') || name === 'node_modules')) return false;
  let above = search.realRoot;
  for (const name of segments) {
    if (await isPackFolder(search, above)) return false;
    above = join(above, name);
  }
  return true;
}

/** The direct walk's test, on a real path: `agent.yaml` is there as a regular file. */
function isPackFolder(search: Search, dir: string): Promise<boolean> {
  let answer = search.packFolderCache.get(dir);
  if (answer === undefined) {
    answer = lstat(join(dir, MANIFEST_FILE)).then(
      (stats) => stats.isFile(),
      () => false,
    );
    search.packFolderCache.set(dir, answer);
  }
  return answer;
}

function holdsManifest(entries: readonly Entry[]): boolean {
  return entries.some((entry) => entry.name === MANIFEST_FILE && entry.isFile());
}

function searchedEntries(entries: readonly Entry[]): Entry[] {
  return entries
    .filter((entry) => !entry.name.startsWith('.') && entry.name !== 'node_modules')
    .sort((a, b) => byteOrder(a.name, b.name));
}

function tooLarge(search: Search, what: string): PackManifestError {
  return new PackManifestError('ERR_PACK_SEARCH_TOO_LARGE', `${search.root} holds ${what}`, {
    file: search.root,
  });
}

function linkedPack(via: string, dir: string): PackManifestError {
  return new PackManifestError(
    'ERR_PACK_SEARCH_SYMLINK',
    `${via} is a symlink to a pack folder${dir === via ? '' : ` or a folder holding one (${dir})`}, which the search does not follow; put the folder there, or name it on its own`,
    { file: via },
  );
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
