import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as crypto from 'node:crypto';
import { realpathSync, statSync, type Stats } from 'node:fs';
import { availableParallelism } from 'node:os';
import { DEFAULT_DIGEST_LIMITS, DIGEST_ALGORITHM, type PackDigestLimits } from './constants.js';
import { PackDigestError } from './errors.js';
import { hashRegularFileSync, type ByteBudget, type HashedFile } from './hash-file.js';
import {
  HASH_BUFFER_BYTES,
  hashFilesInWorkers,
  startHashingPool,
  type HashingPool,
} from './hash-pool.js';
import { digestManifest, type PackManifestEntry } from './manifest.js';
import { walkPack, type WalkedEntry } from './walk.js';

export interface PackDigestEntry extends PackManifestEntry {
  /** Bytes of content (of the link target for a symlink). */
  size: number;
}

export interface PackDigest {
  algorithm: typeof DIGEST_ALGORITHM;
  /** Lowercase hex SHA-256 of the manifest. */
  digest: string;
  /** The manifest entries, in manifest order. */
  entries: PackDigestEntry[];
  /** Sum of `size` over all entries. */
  totalBytes: number;
  /** The resolved pack root that was read. */
  root: string;
}

export interface ComputePackDigestOptions {
  /**
   * Hashing threads to use at most. Default: the machine's available parallelism. Small packs
   * are always hashed on the calling thread: starting threads costs more than it saves there.
   */
  threads?: number;
  /**
   * `auto` (default) hashes on worker threads only when the pack is large enough for that to
   * pay; `never` keeps all hashing on the calling thread; `always` uses threads whenever
   * `threads` > 1 and there are two files or more.
   */
  parallel?: 'auto' | 'never' | 'always';
  /** Refusal limits; each defaults to `DEFAULT_DIGEST_LIMITS`. */
  limits?: Partial<PackDigestLimits>;
  signal?: AbortSignal;
}

// Below these, starting worker threads (~20 ms each) costs more than a second core saves.
const PARALLEL_MIN_FILES = 2048;
const PARALLEL_MIN_BYTES = 24 * 1024 * 1024;
// Files listed per message to the hashing threads while the walk goes on.
const HAND_OUT_EVERY_FILES = 512;
// How much the calling thread hashes before yielding to the event loop.
const YIELD_EVERY_BYTES = 4 * 1024 * 1024;
const YIELD_EVERY_FILES = 64;

/**
 * Computes Pack digest v1 of the directory at `root` (see SPEC.md): reads every file once, in
 * bounded memory, on several threads when the pack is large enough for that to pay.
 */
export async function computePackDigest(
  root: string,
  options: ComputePackDigestOptions = {},
): Promise<PackDigest> {
  const limits: PackDigestLimits = { ...DEFAULT_DIGEST_LIMITS, ...options.limits };
  const threads = Math.max(1, Math.floor(options.threads ?? availableParallelism()));
  const { signal } = options;
  const budget: ByteBudget = {
    used: new BigInt64Array(new SharedArrayBuffer(8)),
    max: limits.maxTotalBytes,
  };
  const listing = listFilesToHash(threads, options.parallel ?? 'auto', budget, signal);
  try {
    const resolvedRoot = resolveRoot(root);
    const walked = await walkPack(resolvedRoot, limits, signal, listing.add, listing.mayYield);
    const files = walked.filter((entry) => entry.kind === 'file');
    const links = walked.filter((entry) => entry.kind === 'symlink');

    const [fileHashes, linkEntries] = await Promise.all([
      listing.hash(),
      Promise.all(links.map(hashSymlink)),
    ]);

    const entries: PackDigestEntry[] = linkEntries;
    files.forEach((file, index) => {
      const hashed = fileHashes[index]!;
      if (!hashed.ok && hashed.reason === 'too-large') {
        throw new PackDigestError(
          'ERR_DIGEST_TOO_LARGE',
          `the pack holds more than ${limits.maxTotalBytes} bytes of content at ${file.path} (${hashed.message})`,
          { path: file.path },
        );
      }
      if (!hashed.ok) {
        throw new PackDigestError(
          hashed.reason === 'changed' ? 'ERR_DIGEST_TREE_CHANGED' : 'ERR_DIGEST_IO',
          hashed.reason === 'changed'
            ? `${file.path} changed while the pack was read (${hashed.message})`
            : `cannot read ${file.path}: ${hashed.message}`,
          { path: file.path },
        );
      }
      entries.push({
        path: file.path,
        mode: hashed.executable ? 'x' : 'f',
        sha256: hashed.sha256,
        size: hashed.size,
      });
    });

    const sorted = sortByPathBytes(entries);
    let totalBytes = 0;
    for (const entry of sorted) totalBytes += entry.size;
    return {
      algorithm: DIGEST_ALGORITHM,
      digest: digestManifest(sorted),
      entries: sorted,
      totalBytes,
      root: resolvedRoot,
    };
  } catch (error) {
    await listing.close();
    if (signal?.aborted) {
      throw new PackDigestError('ERR_DIGEST_ABORTED', 'computing the pack digest was aborted', {
        cause: signal.reason,
      });
    }
    throw error;
  }
}

// Printable ASCII orders by UTF-16 code units exactly as by UTF-8 bytes (SPEC.md's order), so
// the common case sorts without a Buffer per path.
const PRINTABLE_ASCII = /^[\u0020-\u007e]*$/;

function sortByPathBytes(entries: PackDigestEntry[]): PackDigestEntry[] {
  if (entries.every((entry) => PRINTABLE_ASCII.test(entry.path))) {
    return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }
  const keyed = entries.map((entry) => ({ entry, key: Buffer.from(entry.path, 'utf8') }));
  keyed.sort((a, b) => Buffer.compare(a.key, b.key));
  return keyed.map(({ entry }) => entry);
}

// Synchronous: two system calls of a few microseconds each, where a trip through libuv's thread
// pool costs more and, on a loaded machine, waits for a free core (a warm verifyPack on a small
// pack spent more time waiting here than hashing).
function resolveRoot(root: string): string {
  let resolved: string;
  try {
    resolved = realpathSync.native(root);
  } catch (cause) {
    const code = (cause as { code?: string }).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new PackDigestError('ERR_DIGEST_ROOT_NOT_FOUND', `no pack at ${root}`, { cause });
    }
    throw new PackDigestError('ERR_DIGEST_IO', `cannot open ${root}: ${(cause as Error).message}`, {
      cause,
    });
  }
  let info: Stats;
  try {
    info = statSync(resolved);
  } catch (cause) {
    throw new PackDigestError('ERR_DIGEST_IO', `cannot open ${root}: ${(cause as Error).message}`, {
      cause,
    });
  }
  if (!info.isDirectory()) {
    throw new PackDigestError('ERR_DIGEST_ROOT_NOT_DIRECTORY', `${root} is not a directory`);
  }
  return resolved;
}

async function hashSymlink(entry: WalkedEntry): Promise<PackDigestEntry> {
  let target: Buffer;
  try {
    // fs.promises is loaded on first use: most packs hold no symlink (issue 14).
    target = await fs.promises.readlink(entry.absolutePath, { encoding: 'buffer' });
  } catch (cause) {
    const code = (cause as { code?: string }).code;
    throw new PackDigestError(
      code === 'EINVAL' || code === 'ENOENT' ? 'ERR_DIGEST_TREE_CHANGED' : 'ERR_DIGEST_IO',
      `cannot read the symlink ${entry.path}: ${(cause as Error).message}`,
      { path: entry.path, cause },
    );
  }
  return {
    path: entry.path,
    mode: 'l',
    sha256: createHash('sha256').update(target).digest('hex'),
    size: target.length,
  };
}

/**
 * Collects the paths of the files the walk lists, in its order. Once the count alone says that
 * threads pay (the rule `hashFiles` applies to the whole list), it starts the hashing threads
 * and hands them the files listed so far, then more every `HAND_OUT_EVERY_FILES`, so that they
 * boot and hash while the walk goes on: started after the walk, cold workers (~30–40 ms each)
 * found the calling thread had hashed much of the list (issue 14). Small packs never start one.
 *
 * Until the threads have started, when they may still start, the walk does not yield to the
 * event loop (`mayYield`; it still does every 256 folders): whatever the caller runs meanwhile
 * would delay them. The CLI parses agent.yaml while the pack is hashed (~20 ms cold); at the
 * walk's first yield, 16 folders into 20,000 files, the threads had not started, and the whole
 * process waited for the parse (issue 14).
 */
function listFilesToHash(
  threads: number,
  parallel: 'auto' | 'never' | 'always',
  budget: ByteBudget,
  signal?: AbortSignal,
): {
  add(absolutePath: string): void;
  mayYield(): boolean;
  hash(): Promise<HashedFile[]>;
  close(): Promise<void>;
} {
  const paths: string[] = [];
  // From this many files on, hashFiles would use `threads` threads whatever the rest of the list.
  const startAt =
    parallel === 'never' || threads < 2
      ? Infinity
      : Math.max(threads, parallel === 'always' ? 2 : PARALLEL_MIN_FILES);
  let pool: HashingPool | undefined;
  let handedOut = 0;
  return {
    add(absolutePath) {
      paths.push(absolutePath);
      if (pool === undefined && paths.length >= startAt)
        pool = startHashingPool(threads, budget, signal);
      if (pool !== undefined && paths.length - handedOut >= HAND_OUT_EVERY_FILES) {
        pool.add(paths.slice(handedOut));
        handedOut = paths.length;
      }
    },
    mayYield: () => pool !== undefined || startAt === Infinity,
    hash: () =>
      pool === undefined
        ? hashFiles(paths, threads, parallel, budget, signal)
        : pool.finish(paths.slice(handedOut)),
    close: async () => pool?.close(),
  };
}

async function hashFiles(
  paths: readonly string[],
  threads: number,
  parallel: 'auto' | 'never' | 'always',
  budget: ByteBudget,
  signal?: AbortSignal,
): Promise<HashedFile[]> {
  const mayUseThreads = parallel !== 'never' && threads > 1 && paths.length > 1;
  if (mayUseThreads && (parallel === 'always' || paths.length >= PARALLEL_MIN_FILES)) {
    return hashFilesInWorkers(paths, Math.min(threads, paths.length), budget, signal);
  }
  // Hash on the calling thread until the bytes seen reach PARALLEL_MIN_BYTES; the file that
  // would cross it, and all after it, go to the threads. The size comes from the fstat each
  // file gets anyway, so a small pack pays no separate stat pass to decide.
  const buffer = Buffer.allocUnsafe(HASH_BUFFER_BYTES);
  const results: HashedFile[] = [];
  let bytesSeen = 0;
  let bytesSinceYield = 0;
  for (let i = 0; i < paths.length; i++) {
    const remaining = paths.length - i;
    const hashed =
      mayUseThreads && remaining > 1
        ? hashRegularFileSync(fs, crypto, paths[i]!, buffer, PARALLEL_MIN_BYTES - bytesSeen, budget)
        : hashRegularFileSync(fs, crypto, paths[i]!, buffer, undefined, budget);
    if (!hashed.ok && hashed.reason === 'deferred') {
      const rest = await hashFilesInWorkers(
        paths.slice(i),
        Math.min(threads, remaining),
        budget,
        signal,
      );
      for (const result of rest) results.push(result);
      return results;
    }
    results.push(hashed);
    if (hashed.ok) {
      bytesSeen += hashed.size;
      bytesSinceYield += hashed.size;
    }
    if (bytesSinceYield >= YIELD_EVERY_BYTES || i % YIELD_EVERY_FILES === YIELD_EVERY_FILES - 1) {
      bytesSinceYield = 0;
      await new Promise((resolve) => setImmediate(resolve));
      if (signal?.aborted) throw signal.reason;
    }
  }
  return results;
}
