import { constants, realpathSync } from 'node:fs';
import { lstat, mkdir, open, realpath, unlink } from 'node:fs/promises';
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
 * `<root>/<segments...>` as a real folder, creating what is missing. `root` is trusted (the
 * embedder's workspace or state dir); each segment below it must be a real folder, never a link.
 */
export async function ensureDirNoFollow(
  root: string,
  segments: readonly string[],
  mode = 0o755,
): Promise<string> {
  let current = await realpath(root);
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
 * Writes `data` as a fresh regular file at `path` (its folder already checked). An existing
 * regular file is replaced, never written through (it may be a hard link to a file elsewhere);
 * a symlink, folder or anything else there refuses.
 */
export async function writeFileNoFollow(path: string, data: string | Uint8Array): Promise<void> {
  const existing = await lstat(path).catch((error: unknown) => {
    if (errno(error) === 'ENOENT') return undefined;
    throw error;
  });
  if (existing !== undefined) {
    if (!existing.isFile())
      throw new UnsafePathError(`${path} exists and is not a regular file; refusing to replace it`);
    await unlink(path);
  }
  const handle = await open(
    path,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o644,
  ).catch((error: unknown) => {
    if (errno(error) === 'EEXIST' || errno(error) === 'ELOOP')
      throw new UnsafePathError(`${path} appeared while writing it; refusing`);
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
