import { lstatSync, statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { packwardenHome, userHome, type Env } from './env.js';
import { PackManifestError } from './errors.js';
import { isPackName, isSemver } from './names.js';
import { readBoundedFile } from './read-bounded-file.js';

/** `current.txt`: one version (at most 256 characters) and a newline. */
const CURRENT_FILE_MAX_BYTES = 1024;

const MANIFEST_FILE = 'agent.yaml';

export type PackSource = 'path' | 'workspace' | 'home';

export interface ResolvedPack {
  /** Absolute pack folder (the one holding `agent.yaml`). */
  dir: string;
  source: PackSource;
  /** The name looked up, for `workspace` and `home`. */
  name?: string;
  /** The installed version chosen, for `home`. */
  version?: string;
}

export interface ResolvePackOptions {
  /** Where relative paths and the workspace `.packwarden/agents/` start. Default `process.cwd()`. */
  cwd?: string;
  /** Environment for `PACKWARDEN_HOME`. Default `process.env`. */
  env?: Env;
}

export const WORKSPACE_AGENTS_DIR = join('.packwarden', 'agents');
export const CURRENT_FILE = 'current.txt';

/** True when `ref` is written as a path rather than a pack name. */
export function looksLikePath(ref: string): boolean {
  return (
    ref.includes('/') ||
    ref.includes('\\') ||
    ref.startsWith('.') ||
    ref.startsWith('~') ||
    isAbsolute(ref)
  );
}

// Synchronous: one system call of a few microseconds, where a trip through libuv's thread pool
// costs more, and `node:fs/promises` is not loaded for it (with it come readline, the file
// watchers and fs.Dir: ~5 M instructions of every CLI command that names a pack, issue 14).
function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function hasManifest(dir: string): boolean {
  try {
    lstatSync(join(dir, MANIFEST_FILE));
    return true;
  } catch {
    return false;
  }
}

/** Reads an installed pack's `current.txt`: one version, nothing that could leave the folder. */
export async function readCurrentVersion(packDir: string): Promise<string> {
  const file = join(packDir, CURRENT_FILE);
  // One descriptor, opened without following a link or waiting on a FIFO, checked and read:
  // an lstat then a read by path could read what was swapped in between.
  const read = readBoundedFile(file, CURRENT_FILE_MAX_BYTES);
  if (read.kind !== 'read') {
    throw new PackManifestError(
      'ERR_PACK_CURRENT_INVALID',
      `${file} is missing or unreadable: reinstall the pack`,
      {
        file,
        cause: 'cause' in read ? read.cause : new Error(`not a small regular file (${read.kind})`),
      },
    );
  }
  const version = read.bytes.toString('utf8').trim();
  if (!isSemver(version)) {
    throw new PackManifestError(
      'ERR_PACK_CURRENT_INVALID',
      `${file} does not hold a version (found ${JSON.stringify(version.slice(0, 80))})`,
      {
        file,
      },
    );
  }
  return version;
}

/**
 * Finds a pack by path or by name. A path (anything with a slash, or starting with `.` or `~`,
 * or absolute) is used as it is. A name (`name` or `name@version`) is looked up in the
 * workspace's `.packwarden/agents/<name>`, then in `$PACKWARDEN_HOME/agents/<name>/`, following
 * its `current.txt` unless a version is given. A bare name that is not installed but is a folder
 * holding `agent.yaml` under `cwd` is used as a path.
 */
export async function resolvePack(
  ref: string,
  options: ResolvePackOptions = {},
): Promise<ResolvedPack> {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  if (ref === '')
    throw new PackManifestError(
      'ERR_PACK_REF_INVALID',
      'empty pack reference: give a pack name or a path',
    );
  if (looksLikePath(ref)) {
    // `~/` is the user's home as packwardenHome finds it: `$HOME ?? ''` made `~/agents/x`, with
    // HOME unset, empty or relative, the folder `agents/x` under cwd (a checkout's own pack).
    const dir = resolve(
      cwd,
      ref === '~' || ref.startsWith('~/') ? join(userHome(env), ref.slice(2)) : ref,
    );
    if (!isDirectory(dir)) {
      throw new PackManifestError('ERR_PACK_NOT_FOUND', `no pack folder at ${dir}`, { file: dir });
    }
    return { dir, source: 'path' };
  }
  const at = ref.lastIndexOf('@');
  const name = at > 0 ? ref.slice(0, at) : ref;
  const version = at > 0 ? ref.slice(at + 1) : undefined;
  if (!isPackName(name) || (version !== undefined && !isSemver(version))) {
    throw new PackManifestError(
      'ERR_PACK_REF_INVALID',
      `"${ref}" is neither a path nor a pack name: names are kebab-case (e.g. code-reviewer or code-reviewer@1.2.0); write a folder as ./${ref}`,
    );
  }
  const looked: string[] = [];
  if (version === undefined) {
    const workspaceDir = resolve(cwd, WORKSPACE_AGENTS_DIR, name);
    looked.push(workspaceDir);
    if (hasManifest(workspaceDir)) return { dir: workspaceDir, source: 'workspace', name };
  }
  const homeDir = join(packwardenHome(env), 'agents', name);
  looked.push(homeDir);
  if (isDirectory(homeDir)) {
    const chosen = version ?? (await readCurrentVersion(homeDir));
    const dir = join(homeDir, chosen);
    if (isDirectory(dir)) return { dir, source: 'home', name, version: chosen };
    throw new PackManifestError(
      'ERR_PACK_NOT_FOUND',
      `${name}@${chosen} is not installed (no ${dir})`,
      { file: dir },
    );
  }
  if (version === undefined) {
    const local = resolve(cwd, name);
    if (isDirectory(local) && hasManifest(local)) return { dir: local, source: 'path' };
  }
  throw new PackManifestError(
    'ERR_PACK_NOT_FOUND',
    `no pack named ${ref}: looked in ${looked.join(' and ')}`,
  );
}

export interface InstalledPack {
  name: string;
  source: 'workspace' | 'home';
  /** The folder `resolvePack(name)` would use. */
  dir: string;
  /** The current version (home), when readable. */
  version?: string;
  /** Every installed version folder (home). */
  versions: string[];
  /** Why this entry is unusable, if it is. */
  problem?: string;
}

export interface ListInstalledPacksOptions extends ResolvePackOptions {
  /**
   * Pack names one location (the workspace's `.packwarden/agents`, `$PACKWARDEN_HOME/agents`)
   * may hold; more is `ERR_PACK_LIST_TOO_LARGE`, never a shorter list. Default 10,000.
   */
  maxPacks?: number;
}

/**
 * The pack names in `dir` that `resolvePack` would look at, sorted. Entries are judged the way
 * `resolvePack` judges them (`stat`, which follows a symlink), not by their directory entry's
 * type: listing only real folders left out a symlink there, which `resolvePack` follows, so
 * `pack verify --installed` never checked the pack a name actually runs.
 *
 * Never a shorter list than `resolvePack` can reach: a list cut at `maxPacks` let 10,000 files
 * named before a pack push it out of `pack verify --installed` while the name still ran it, and
 * a folder that could not be read (search permission without read permission) listed as empty.
 * Only a folder that is not there, or a path through a file, lists nothing: `resolvePack` finds
 * nothing through it either.
 */
async function listNames(dir: string, maxPacks: number): Promise<string[]> {
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch (cause) {
    const code = (cause as { code?: string }).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    throw new PackManifestError(
      'ERR_MANIFEST_IO',
      `cannot list ${dir}: ${(cause as Error).message}; a pack there could still run by name, so nothing is listed`,
      { file: dir, cause },
    );
  }
  const names = entries.filter(isPackName);
  if (names.length > maxPacks) {
    throw new PackManifestError(
      'ERR_PACK_LIST_TOO_LARGE',
      `${dir} holds more than ${maxPacks} pack names; listing some would leave out packs that run by name: remove what is not a pack there`,
      { file: dir },
    );
  }
  return names.sort();
}

/**
 * Lists packs in the workspace and in `$PACKWARDEN_HOME`; broken entries carry a `problem`. A
 * location it cannot list completely throws (`ERR_MANIFEST_IO`, `ERR_PACK_LIST_TOO_LARGE`).
 */
export async function listInstalledPacks(
  options: ListInstalledPacksOptions = {},
): Promise<InstalledPack[]> {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  const maxPacks = options.maxPacks ?? 10_000;
  const packs: InstalledPack[] = [];
  const workspace = resolve(cwd, WORKSPACE_AGENTS_DIR);
  for (const name of await listNames(workspace, maxPacks)) {
    const dir = join(workspace, name);
    // What resolvePack takes (a manifest there), and a folder without one, reported.
    const resolves = hasManifest(dir);
    if (!resolves && !isDirectory(dir)) continue;
    const entry: InstalledPack = { name, source: 'workspace', dir, versions: [] };
    if (!resolves) entry.problem = `no ${MANIFEST_FILE}`;
    packs.push(entry);
  }
  const home = join(packwardenHome(env), 'agents');
  for (const name of await listNames(home, maxPacks)) {
    const packDir = join(home, name);
    if (!isDirectory(packDir)) continue;
    const versions = (await readdir(packDir))
      .filter((version) => isSemver(version) && isDirectory(join(packDir, version)))
      .sort();
    const entry: InstalledPack = { name, source: 'home', dir: packDir, versions };
    try {
      entry.version = await readCurrentVersion(packDir);
      entry.dir = join(packDir, entry.version);
      if (!versions.includes(entry.version))
        entry.problem = `current version ${entry.version} is not installed`;
    } catch (error) {
      entry.problem = (error as Error).message;
    }
    packs.push(entry);
  }
  return packs;
}
