import type * as Fs from 'node:fs';
import type * as FsPromises from 'node:fs/promises';

/** Turns the simulation on and off, and counts the entries it made without a type. */
export interface UntypedDirents {
  on: boolean;
  made: number;
}

type DirentConstructor = new (name: string | Buffer, type: number, path: string) => Fs.Dirent;

/**
 * The tests of code that walks folders on a file system whose readdir gives no entry types
 * (`DT_UNKNOWN`: NFS, FUSE, XFS without `ftype`), which cannot be mounted here. While `state.on`,
 * every `Dirent` the real readdir returns is made again as Node makes it for `DT_UNKNOWN` (type
 * 0), so that every `is…()` answers no; everything else is the real module. For `vi.mock`, with
 * the state from `vi.hoisted`:
 *
 *   const untyped = vi.hoisted(() => ({ on: false, made: 0 }));
 *   vi.mock('node:fs', async (actual) =>
 *     (await import('../../../scripts/untyped-dirents.js')).untypedFs(await actual(), untyped));
 */
export function untypedFs(actual: typeof Fs, state: UntypedDirents): typeof Fs {
  const untype = (entries: unknown[], path: string) =>
    entries.map((entry) => {
      state.made += 1;
      return new (actual.Dirent as never as DirentConstructor)((entry as Fs.Dirent).name, 0, path);
    });
  const readdirSync = ((path: string, options?: { withFileTypes?: boolean }) => {
    const entries = actual.readdirSync(path, options as { withFileTypes: true });
    return state.on && options?.withFileTypes === true ? untype(entries, path) : entries;
  }) as typeof actual.readdirSync;
  return { ...actual, readdirSync, default: { ...actual, readdirSync } } as typeof Fs;
}

/** {@link untypedFs} for `node:fs/promises`' `readdir`. */
export function untypedFsPromises(
  actual: typeof FsPromises,
  fs: typeof Fs,
  state: UntypedDirents,
): typeof FsPromises {
  const readdir = (async (path: string, options?: { withFileTypes?: boolean }) => {
    const entries = await actual.readdir(path, options as { withFileTypes: true });
    if (!state.on || options?.withFileTypes !== true) return entries;
    return entries.map((entry) => {
      state.made += 1;
      return new (fs.Dirent as never as DirentConstructor)(entry.name, 0, path);
    });
  }) as typeof actual.readdir;
  return { ...actual, readdir, default: { ...actual, readdir } } as typeof FsPromises;
}
