import { constants, realpathSync } from 'node:fs';
import { lstat, mkdir, open, realpath, unlink, type FileHandle } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import { readBoundedFile } from '@packwarden/pack-manifest/fs';

/**
 * File operations for places where someone else may have planted links: a workspace (cloned
 * from anywhere) and the engine state the engine itself writes. None of them follows a symlink:
 * a folder on the way that is a symlink, or a file to be written that is one, refuses the
 * operation (README, "Custom engines": "workspaceSync").
 */
export class UnsafePathError extends Error {
  /** The turn's failure code: `workspace_sync_refused`, or `engine_state_refused` for the state dir. */
  code: 'workspace_sync_refused' | 'engine_state_refused' = 'workspace_sync_refused';
  constructor(message: string) {
    super(message);
    this.name = 'UnsafePathError';
  }
}

export function isInside(root: string, path: string, allowEqual = false): boolean {
  const rel = relative(root, path);
  if (rel === '') return allowEqual;
  return !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
}

function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException).code;
}

/**
 * A folder held open, found without following a link. Names below it resolve against the open
 * folder itself, whatever happens to its path afterwards: someone who can write the workspace
 * (a confined engine process, alive between turns) may swap a checked folder for a symlink before
 * the next write, and a path checked then written would follow it out of the walls.
 */
export interface HeldDir {
  /** The folder's path (real), for messages and for what engines are told. */
  readonly path: string;
  /**
   * Where names below it resolve: on Linux `/proc/self/fd/<fd>`, the kernel's link to the open
   * folder (`openat(2)`, which Node lacks); elsewhere, where packwarden has no walls to escape
   * (docs/sandbox.md), the path itself.
   */
  readonly at: string;
  close(): Promise<void>;
}

const HOLD_BY_FD = process.platform === 'linux';
const DIR_NO_FOLLOW =
  constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** A name a held folder may resolve: one plain segment (`path.join` would fold `..` away). */
function plainName(dir: HeldDir, name: string): string {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0'))
    throw new UnsafePathError(`${JSON.stringify(name)} is not a plain name inside ${dir.path}`);
  return name;
}

/** Opens `<at>/<name>` as a folder, never through a link; undefined when it does not exist. */
async function openDirAt(at: string, name: string, shown: string): Promise<FileHandle | undefined> {
  try {
    return await open(join(at, name), DIR_NO_FOLLOW);
  } catch (error) {
    if (errno(error) === 'ENOENT') return undefined;
    if (errno(error) !== 'ELOOP' && errno(error) !== 'ENOTDIR') throw error;
    // Linux answers ENOTDIR for a link opened as a folder without following it: say which.
    const link = await lstat(join(at, name)).then(
      (info) => info.isSymbolicLink(),
      () => false,
    );
    throw new UnsafePathError(
      link ? `${shown} is a symbolic link; refusing to follow it` : `${shown} is not a folder`,
    );
  }
}

/**
 * `<root>/<segments...>` as a real folder, created where missing, and held open ({@link HeldDir}).
 * `root` is trusted (the embedder's workspace or state dir); each segment below it must be a real
 * folder, never a link, and each is opened from the one above it, so no swap of a folder on the
 * way after its check can lead anywhere else. The caller closes it.
 */
export async function holdDirNoFollow(
  root: string,
  segments: readonly string[],
  mode = 0o755,
): Promise<HeldDir> {
  let current = await realpath(root);
  if (!HOLD_BY_FD) {
    current = await walkDirNoFollow(current, segments, mode);
    return { path: current, at: current, close: async () => {} };
  }
  let handle = await open(current, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    for (const segment of segments) {
      const at = `/proc/self/fd/${handle.fd}`;
      const shown = join(current, segment);
      let next = await openDirAt(at, segment, shown);
      if (next === undefined) {
        await mkdir(join(at, segment), { mode }).catch((error: unknown) => {
          if (errno(error) !== 'EEXIST') throw error;
        });
        next = await openDirAt(at, segment, shown);
        if (next === undefined) throw new UnsafePathError(`${shown} vanished while made; refusing`);
      }
      await handle.close();
      handle = next;
      current = shown;
    }
  } catch (error) {
    await handle.close();
    throw error;
  }
  const held = handle;
  return { path: current, at: `/proc/self/fd/${held.fd}`, close: () => held.close() };
}

/** The path walk of {@link holdDirNoFollow} where folders cannot be held by descriptor. */
async function walkDirNoFollow(
  start: string,
  segments: readonly string[],
  mode: number,
): Promise<string> {
  let current = start;
  for (const segment of segments) {
    current = join(current, segment);
    let info = await lstat(current).catch((error: unknown) => {
      if (errno(error) === 'ENOENT') return undefined;
      throw error;
    });
    if (info === undefined) {
      await mkdir(current, { mode }).catch((error: unknown) => {
        if (errno(error) !== 'EEXIST') throw error;
      });
      info = await lstat(current);
    }
    if (info.isSymbolicLink())
      throw new UnsafePathError(`${current} is a symbolic link; refusing to follow it`);
    if (!info.isDirectory()) throw new UnsafePathError(`${current} is not a folder`);
  }
  return current;
}

/**
 * `<root>/<segments...>` as a real folder, creating what is missing ({@link holdDirNoFollow},
 * released at once): for folders handed to others by path, such as the engine state.
 */
export async function ensureDirNoFollow(
  root: string,
  segments: readonly string[],
  mode = 0o755,
): Promise<string> {
  const held = await holdDirNoFollow(root, segments, mode);
  await held.close();
  return held.path;
}

/**
 * Writes `data` as a fresh regular file `name` in the held folder `dir`. An existing regular file
 * is replaced, never written through (it may be a hard link to a file elsewhere); a symlink,
 * folder or anything else there refuses, and so does a folder removed meanwhile.
 */
export async function writeFileNoFollow(
  dir: HeldDir,
  name: string,
  data: string | Uint8Array,
): Promise<void> {
  const path = join(dir.at, plainName(dir, name));
  const shown = join(dir.path, name);
  const existing = await lstat(path).catch((error: unknown) => {
    if (errno(error) === 'ENOENT') return undefined;
    throw error;
  });
  if (existing !== undefined) {
    if (!existing.isFile())
      throw new UnsafePathError(
        `${shown} exists and is not a regular file; refusing to replace it`,
      );
    await unlink(path).catch((error: unknown) => {
      if (errno(error) !== 'ENOENT') throw error;
    });
  }
  const handle = await open(
    path,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o644,
  ).catch((error: unknown) => {
    if (errno(error) === 'EEXIST' || errno(error) === 'ELOOP')
      throw new UnsafePathError(`${shown} appeared while writing it; refusing`);
    if (errno(error) === 'ENOENT')
      throw new UnsafePathError(`${dir.path} was removed while writing ${name}; refusing`);
    throw error;
  });
  try {
    await handle.writeFile(data);
  } finally {
    await handle.close();
  }
}

/** `realpath` (libuv's, as `fs.promises.realpath`), or undefined when `path` does not resolve. */
export function realpathOrUndefined(path: string): string | undefined {
  try {
    return realpathSync.native(path);
  } catch {
    return undefined;
  }
}

/**
 * Reads a regular file inside `root` (symlinks resolved, and refused when they leave `root`),
 * at most `maxBytes`, with `readBoundedFile`. Undefined when it does not exist, is not a regular
 * file, leaves `root`, is larger or grows while read; rejects when the OS refuses to read it.
 *
 * Synchronous calls (a few microseconds each for these small files) behind a promise: a sandbox
 * boot reads the pack's prompts, rules and MCP files with them, where ~8 trips through the
 * thread pool per file made the boot wait ~2 ms in all (issue 14, bench/README.md).
 */
export async function readFileInside(
  root: string,
  path: string,
  maxBytes: number,
): Promise<Buffer | undefined> {
  const real = realpathOrUndefined(path);
  if (real === undefined || !isInside(realpathSync.native(root), real)) return undefined;
  const read = readBoundedFile(real, maxBytes);
  if (read.kind === 'failed') throw read.cause;
  return read.kind === 'read' ? read.bytes : undefined;
}
