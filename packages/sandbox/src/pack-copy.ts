import {
  closeSync,
  constants,
  createReadStream,
  createWriteStream,
  fchmodSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  realpathSync,
  rmdirSync,
  rmSync,
  symlinkSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { join, relative, isAbsolute, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { typedEntry } from '@packwarden/pack-manifest/fs';
import { SandboxError } from './errors.js';
import { SANDBOX_LIMITS } from './limits.js';

/** Whether `inner` is `outer` or lies inside it (both absolute, already resolved). */
export function isWithin(inner: string, outer: string): boolean {
  const rel = relative(outer, inner);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/** Whether two folders overlap: the same, or one inside the other. */
export function pathsOverlap(a: string, b: string): boolean {
  return isWithin(a, b) || isWithin(b, a);
}

/** `realpath`, or the path itself when it does not exist yet (nothing to resolve). */
function resolved(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** `lstat`, or undefined when nothing is there. */
function lstatIfAny(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Refuses a copy whose source and destination overlap: copying a pack into itself recurses until
 * the path is too long, and replacing a folder that holds the source empties the pack
 * (docs/sandbox.md, "The pack is synced into the workspace").
 */
export async function assertNoOverlap(source: string, target: string, what: string): Promise<void> {
  const from = resolved(source);
  const to = resolved(target);
  if (pathsOverlap(from, to)) {
    throw new SandboxError(
      'ERR_WORKSPACE_OVERLAPS_PACK',
      `${what}: the pack ${from} and ${to} overlap (one is inside the other); use a workspace outside the pack, and a pack outside the workspace's .packwarden/agents/`,
    );
  }
}

/**
 * Prepares `root/segments…` as an empty folder for a fresh copy, never following a symlink: each
 * level is `lstat`ed from `root` (a folder the caller trusts) and must be a real folder or
 * missing (then created); the last level, if it exists, must be a real folder and is removed
 * (`rm` unlinks symlinks inside it, never follows them). Anything else is refused before any
 * change (docs/sandbox.md: sync never traverses a symlink it did not create). Synchronous calls,
 * as for the copy below: a boot prepares a handful of folders (issue 14, bench/boot).
 */
export async function prepareTargetDir(root: string, segments: readonly string[]): Promise<string> {
  let rootInfo: Stats | undefined;
  try {
    rootInfo = lstatSync(root);
  } catch {
    // Missing or unreadable: refused below.
  }
  if (rootInfo === undefined || !rootInfo.isDirectory()) {
    throw new SandboxError('ERR_UNSAFE_PATH', `${root} is not a folder (a symlink or missing)`);
  }
  // Check every level before changing anything, so a refusal leaves no trace.
  let path = root;
  const missing: string[] = [];
  for (const segment of segments) {
    path = join(path, segment);
    let info: Stats | undefined;
    try {
      info = lstatIfAny(path);
    } catch (error) {
      throw new SandboxError(
        'ERR_UNSAFE_PATH',
        `cannot inspect ${path}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    if (info === undefined) {
      missing.push(path);
      continue;
    }
    if (missing.length > 0 || !info.isDirectory()) {
      throw new SandboxError(
        'ERR_UNSAFE_PATH',
        `refusing to write through ${path}: it is ${info.isSymbolicLink() ? 'a symlink' : 'not a folder'}; the sandbox never follows a link it did not create`,
      );
    }
  }
  const target = path;
  if (!missing.includes(target)) rmSync(target, { recursive: true, force: true });
  let created = root;
  for (const segment of segments) {
    created = join(created, segment);
    // Non-recursive mkdir: an entry that appeared since the check fails it (EEXIST).
    try {
      mkdirSync(created);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || created === target)
        throw unsafe(created, error);
    }
    const info = lstatSync(created);
    if (!info.isDirectory()) throw unsafe(created);
  }
  return target;
}

function unsafe(path: string, cause?: unknown): SandboxError {
  return new SandboxError(
    'ERR_UNSAFE_PATH',
    `refusing to write through ${path}: it changed while the sandbox was preparing it`,
    cause === undefined ? {} : { cause },
  );
}

/**
 * Copies a pack tree into `target` (an empty folder): regular files (keeping their permission
 * bits, which the digest covers), folders, and symlinks as links (never followed). A folder that
 * ends up holding no file or symlink is left out: folders are not digest entries (pack-digest
 * SPEC.md, rule 2), so an empty one is not signed content and must not reach the verified copy,
 * where an engine could take its name for something (a skill). Source files
 * are opened with `O_NOFOLLOW | O_NONBLOCK` (a FIFO swapped in is refused, not waited on) and
 * destination files created with `O_EXCL`, so a link swapped in during the copy is refused rather
 * than followed. Bounded by {@link SANDBOX_LIMITS}.
 *
 * Folders, links and files up to {@link SYNC_COPY_MAX_BYTES} are copied with synchronous calls:
 * a pack is mostly small files, and a trip through the thread pool per call made copying the
 * example pack, twice per sandbox boot, ~40 ms of waiting (issue 14, bench/boot). Larger files
 * are streamed, so that the event loop is never held for long.
 */
export async function copyPackTree(source: string, target: string): Promise<number> {
  let count = 0;
  let bytes = 0;
  /** Copies `from` into `to`; returns how many files and symlinks it copied at any depth. */
  const visit = async (from: string, to: string, depth: number): Promise<number> => {
    if (depth > SANDBOX_LIMITS.maxPackDepth) {
      throw new SandboxError(
        'ERR_PACK_COPY',
        `the pack is nested deeper than ${SANDBOX_LIMITS.maxPackDepth} folders`,
      );
    }
    let content = 0;
    for (const dirent of readdirSync(from, { withFileTypes: true })) {
      // A type readdir left out (DT_UNKNOWN: NFS, FUSE) comes from lstat, not "not a file".
      const entry = typedEntry(from, dirent);
      count += 1;
      if (count > SANDBOX_LIMITS.maxPackEntries) {
        throw new SandboxError(
          'ERR_PACK_COPY',
          `the pack has more than ${SANDBOX_LIMITS.maxPackEntries} entries`,
        );
      }
      const src = join(from, entry.name);
      const dst = join(to, entry.name);
      if (entry.isDirectory()) {
        mkdirSync(dst);
        const inside = await visit(src, dst, depth + 1);
        if (inside === 0) rmdirSync(dst);
        content += inside;
      } else if (entry.isSymbolicLink()) {
        symlinkSync(readlinkSync(src), dst);
        content += 1;
      } else if (entry.isFile()) {
        bytes += await copyFileNoFollow(src, dst, SANDBOX_LIMITS.maxPackBytes - bytes);
        content += 1;
      } else {
        throw new SandboxError(
          'ERR_PACK_COPY',
          `cannot copy ${src}: not a file, folder or symlink`,
        );
      }
    }
    return content;
  };
  await visit(source, target, 0);
  return count;
}

/** Files up to this size are copied with synchronous reads and writes (`copyPackTree`). */
export const SYNC_COPY_MAX_BYTES = 1024 * 1024;

const SOURCE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const TARGET_FLAGS =
  constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

async function copyFileNoFollow(src: string, dst: string, budget: number): Promise<number> {
  const input = openSync(src, SOURCE_FLAGS);
  let output: number | undefined;
  let handedOver = false;
  try {
    const info = fstatSync(input);
    if (!info.isFile()) {
      throw new SandboxError('ERR_PACK_COPY', `cannot copy ${src}: not a regular file`);
    }
    if (info.size > budget) {
      throw new SandboxError(
        'ERR_PACK_COPY',
        `the pack is larger than ${SANDBOX_LIMITS.maxPackBytes} bytes`,
      );
    }
    const size = info.size;
    output = openSync(dst, TARGET_FLAGS, 0o600);
    fchmodSync(output, info.mode & 0o777);
    if (size > SYNC_COPY_MAX_BYTES) {
      // The streams own (and close) the descriptors; reading stops at the size checked above.
      handedOver = true;
      await pipeline(
        createReadStream('', { fd: input, start: 0, end: size - 1 }),
        createWriteStream('', { fd: output }),
      );
      return size;
    }
    // At most `size` bytes, as the stream reads: what was added since the fstat is not copied
    // (the copy is verified afterwards, docs/sandbox.md).
    const buffer = Buffer.allocUnsafe(size);
    let read = 0;
    while (read < size) {
      const got = readSync(input, buffer, read, size - read, read);
      if (got === 0) break;
      read += got;
    }
    let written = 0;
    while (written < read) written += writeSync(output, buffer, written, read - written);
    return read;
  } finally {
    if (!handedOver) {
      closeQuietly(input);
      if (output !== undefined) closeQuietly(output);
    }
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Nothing more to do with it: every byte was written, or the copy already failed.
  }
}

/** Replaces `root/segments…` with a fresh copy of `source`, refusing links and overlaps. */
export async function replaceWithCopy(
  source: string,
  root: string,
  segments: readonly string[],
  what: string,
): Promise<string> {
  await assertNoOverlap(source, join(root, ...segments), what);
  const target = await prepareTargetDir(root, segments);
  await copyPackTree(source, target);
  return target;
}
