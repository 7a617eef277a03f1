import { createHash, type Hash } from 'node:crypto';
import { close, constants as fsConstants, fchmod, mkdir as mkdirCb, open, write } from 'node:fs';
import { chmod, rmdir } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { checkArchivePath, foldName } from './archive-path.js';
import { abortError, isStoreError, StoreError } from './errors.js';
import { isEmptyOrMissingDir, makeStagingDir, promoteStaging, removeTree } from './staging.js';
import { inflateGzip } from './gunzip.js';
import { resolveExtractLimits, type ExtractLimits } from './limits.js';
import { PathRegistry } from './path-registry.js';
import { archivePathMapper, refuseEntryType } from './entry-policy.js';
import { TarReader, type TarEntry, type TarEvent } from './tar-reader.js';

export interface ExtractOptions {
  limits?: Partial<ExtractLimits>;
  /**
   * Extract only what lies under this folder of the archive, relative to it (e.g. a pack's
   * subfolder of a repository tarball). Entries elsewhere are read, counted and skipped.
   */
  stripPrefix?: string;
  /**
   * The archive holds exactly one top folder (as GitHub tarballs do, `<owner>-<repo>-<sha7>/`)
   * whose name is not known in advance: strip it before `stripPrefix` applies. An archive with
   * entries outside one single top folder is refused.
   */
  stripTopFolder?: boolean;
  /** Replace a non-empty `dest` (the old content is removed only once the new one is in place). */
  force?: boolean;
  onProgress?: (progress: { phase: 'extract'; bytes: number; files: number }) => void;
  /**
   * Hash every file as it is written and return `entries`: with them the Pack digest v1 of the
   * result is known without reading it back (`digestExtractedEntries`).
   */
  collectEntries?: boolean;
  signal?: AbortSignal;
}

/** One extracted file, as a Pack digest v1 manifest entry. */
export interface ExtractedEntry {
  /** Relative, `/`-separated, NFC-normalised. */
  path: string;
  /** `x` when written 0755, else `f`. */
  mode: 'f' | 'x';
  sha256: string;
  size: number;
}

export interface ExtractResult {
  files: number;
  directories: number;
  /** Bytes of file content written. */
  bytes: number;
  /** The `comment` of the archive's global PAX header (a GitHub tarball's commit), if any. */
  comment?: string;
  /** With `collectEntries`: every file written, unsorted. */
  entries?: ExtractedEntry[];
}

const GZIP_CHUNK = 64 * 1024;
const SMALL_FILE = 1024 * 1024;
const MAX_IN_FLIGHT = 16;
const MAX_IN_FLIGHT_BYTES = 64 * 1024 * 1024;
const OPEN_FLAGS =
  fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | (fsConstants.O_NOFOLLOW ?? 0);

let cachedUmask: number | undefined;
function currentUmask(): number {
  cachedUmask ??= process.umask();
  return cachedUmask;
}

/** setuid, setgid, sticky and write bits for others are dropped: owner-exec decides. */
export function normalizeMode(mode: number): 0o755 | 0o644 {
  return mode & 0o100 ? 0o755 : 0o644;
}

function openP(path: string, mode: number): Promise<number> {
  return new Promise((res, rej) => open(path, OPEN_FLAGS, mode, (e, fd) => (e ? rej(e) : res(fd))));
}
function closeP(fd: number): Promise<void> {
  return new Promise((res, rej) => close(fd, (e) => (e ? rej(e) : res())));
}
function fchmodP(fd: number, mode: number): Promise<void> {
  return new Promise((res, rej) => fchmod(fd, mode, (e) => (e ? rej(e) : res())));
}
function mkdirP(path: string): Promise<void> {
  return new Promise((res, rej) => mkdirCb(path, 0o755, (e) => (e ? rej(e) : res())));
}
async function writeAll(fd: number, data: Buffer): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    offset += await new Promise<number>((res, rej) =>
      write(fd, data, offset, data.length - offset, null, (e, n) => (e ? rej(e) : res(n))),
    );
  }
}

function ioError(error: unknown, path: string): StoreError {
  if (isStoreError(error)) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EEXIST') {
    return new StoreError(
      'ERR_ARCHIVE_PATH_COLLISION',
      `${JSON.stringify(path)} already exists (a colliding name)`,
      {
        subject: path,
        cause: error,
      },
    );
  }
  return new StoreError(
    'ERR_ARCHIVE_IO',
    `writing ${JSON.stringify(path)} failed: ${String(code ?? error)}`,
    {
      subject: path,
      cause: error,
    },
  );
}

/** A Buffer becomes a stream of 64 KiB chunks (never one copy of a large archive in one piece). */
export function toArchiveStream(archive: Readable | Buffer | Uint8Array): Readable {
  if (archive instanceof Readable) return archive;
  if (archive instanceof Uint8Array) {
    const buffer = Buffer.from(archive.buffer, archive.byteOffset, archive.byteLength);
    return Readable.from(
      (function* () {
        for (let i = 0; i < buffer.length; i += GZIP_CHUNK)
          yield buffer.subarray(i, i + GZIP_CHUNK);
      })(),
      { objectMode: false },
    );
  }
  throw new StoreError('ERR_INVALID_ARGUMENT', 'archive must be a Readable stream or a Buffer');
}

interface PreparedOptions {
  limits: ExtractLimits;
  stripPrefix: string | undefined;
  stripTopFolder: boolean;
  onProgress: ExtractOptions['onProgress'];
  signal: AbortSignal | undefined;
}

function normalizePrefix(prefix: string | undefined): string | undefined {
  if (prefix === undefined) return undefined;
  const trimmed = prefix.replace(/^\/+|\/+$/g, '');
  if (trimmed === '') return undefined;
  if (
    trimmed.split('/').some((s) => s === '' || s === '.' || s === '..') ||
    trimmed.includes('\\')
  ) {
    throw new StoreError(
      'ERR_INVALID_ARGUMENT',
      `stripPrefix ${JSON.stringify(prefix)} is not a plain relative folder`,
    );
  }
  return trimmed;
}

/**
 * Extracts a .tar.gz into `dir`, an existing empty folder the caller owns (a staging folder).
 * On failure `dir` may hold part of the archive: the caller removes it.
 */
export async function extractInto(
  archive: Readable | Buffer | Uint8Array,
  dir: string,
  options: ExtractOptions = {},
): Promise<ExtractResult> {
  const prepared: PreparedOptions = {
    limits: resolveExtractLimits(options.limits),
    stripPrefix: normalizePrefix(options.stripPrefix),
    stripTopFolder: options.stripTopFolder ?? false,
    onProgress: options.onProgress,
    signal: options.signal,
  };
  const { limits, signal } = prepared;
  if (signal?.aborted) throw abortError(signal);
  const root = resolve(dir);
  const reader = new TarReader(limits);
  const registry = new PathRegistry();

  let tarBytes = 0;
  let scanned = 0;
  let entries = 0;
  let files = 0;
  let directories = 0;
  let bytes = 0;
  let matched = false;
  let lastProgress = 0;

  // The file being read: small ones are gathered and written by a background task, big ones
  // are streamed to an open descriptor.
  let current:
    | { skip: true }
    | {
        skip: false;
        path: string;
        relative: string;
        mode: number;
        chunks: Buffer[] | undefined;
        fd: number | undefined;
        size: number;
        hash: Hash | undefined;
      }
    | undefined;
  const inFlight = new Set<Promise<void>>();
  let inFlightBytes = 0;
  let failure: unknown;
  const collected: ExtractedEntry[] | undefined = options.collectEntries ? [] : undefined;
  const record = (file: { relative: string; mode: number; size: number }, sha256: string): void => {
    collected!.push({
      path: file.relative.normalize('NFC'),
      mode: file.mode & 0o100 ? 'x' : 'f',
      sha256,
      size: file.size,
    });
  };

  const umask = currentUmask();
  const track = (task: Promise<void>, size: number): void => {
    inFlightBytes += size;
    const tracked = task.then(
      () => {
        inFlight.delete(tracked);
        inFlightBytes -= size;
      },
      (error: unknown) => {
        inFlight.delete(tracked);
        inFlightBytes -= size;
        failure ??= error;
      },
    );
    inFlight.add(tracked);
  };
  const throttle = async (): Promise<void> => {
    while (inFlight.size >= MAX_IN_FLIGHT || inFlightBytes > MAX_IN_FLIGHT_BYTES) {
      await Promise.race(inFlight);
    }
    if (failure !== undefined) throw failure;
  };

  const writeSmall = async (path: string, mode: number, data: Buffer): Promise<void> => {
    let fd: number | undefined;
    try {
      fd = await openP(path, mode);
      if (data.length > 0) await writeAll(fd, data);
      if ((mode & ~umask) !== mode) await fchmodP(fd, mode);
      const opened = fd;
      fd = undefined;
      await closeP(opened);
    } catch (error) {
      if (fd !== undefined) await closeP(fd).catch(() => undefined);
      throw ioError(error, path.slice(root.length + 1));
    }
  };

  const mapPath = archivePathMapper(prepared);

  const onEntry = async (entry: TarEntry): Promise<void> => {
    if (++scanned > limits.maxScannedEntries) {
      throw new StoreError(
        'ERR_ARCHIVE_TOO_MANY_ENTRIES',
        `more than ${limits.maxScannedEntries} entries in the archive`,
      );
    }
    const relative = mapPath(entry.path);
    if (relative === undefined) {
      current = { skip: true };
      return;
    }
    matched = true;
    refuseEntryType(entry);
    const segments = checkArchivePath(relative === '' ? '.' : relative, limits);
    if (segments.length === 0) {
      if (entry.type === 'file') {
        throw new StoreError(
          'ERR_ARCHIVE_PATH_UNSAFE',
          `a file named like the root folder: ${JSON.stringify(entry.path)}`,
          {
            subject: entry.path,
          },
        );
      }
      current = { skip: true };
      return;
    }
    if (++entries > limits.maxEntries) {
      throw new StoreError(
        'ERR_ARCHIVE_TOO_MANY_ENTRIES',
        `more than ${limits.maxEntries} files and directories`,
      );
    }
    if (entry.type === 'file' && bytes + entry.size > limits.maxBytes) {
      throw new StoreError(
        'ERR_ARCHIVE_TOO_LARGE',
        `more than ${limits.maxBytes} bytes of content (at ${JSON.stringify(relative)})`,
        { subject: relative },
      );
    }
    const newDirectories = registry.add(
      segments,
      entry.type === 'directory' ? 'directory' : 'file',
      foldName,
    );
    for (const directory of newDirectories) {
      const path = join(root, ...directory);
      try {
        await mkdirP(path);
        if ((0o755 & ~umask) !== 0o755) await chmod(path, 0o755);
      } catch (error) {
        throw ioError(error, directory.join('/'));
      }
      directories++;
    }
    if (entry.type === 'directory') {
      current = { skip: true };
      return;
    }
    files++;
    bytes += entry.size;
    const path = join(root, ...segments);
    const mode = normalizeMode(entry.mode);
    if (entry.size <= SMALL_FILE) {
      current = {
        skip: false,
        path,
        relative: segments.join('/'),
        mode,
        chunks: [],
        fd: undefined,
        size: entry.size,
        hash: undefined,
      };
      return;
    }
    await throttle();
    try {
      current = {
        skip: false,
        path,
        mode,
        relative: segments.join('/'),
        chunks: undefined,
        fd: await openP(path, mode),
        size: entry.size,
        hash: collected ? createHash('sha256') : undefined,
      };
    } catch (error) {
      throw ioError(error, relative);
    }
  };

  const onData = async (chunk: Buffer): Promise<void> => {
    if (!current || current.skip) return;
    if (current.chunks) {
      current.chunks.push(chunk);
      return;
    }
    current.hash?.update(chunk);
    try {
      await writeAll(current.fd!, chunk);
    } catch (error) {
      throw ioError(error, current.path.slice(root.length + 1));
    }
  };

  const onEntryEnd = async (): Promise<void> => {
    const file = current;
    current = undefined;
    if (!file || file.skip) return;
    if (file.chunks) {
      const data =
        file.chunks.length === 1 ? file.chunks[0]! : Buffer.concat(file.chunks, file.size);
      if (collected) record(file, createHash('sha256').update(data).digest('hex'));
      await throttle();
      track(writeSmall(file.path, file.mode, data), data.length);
    } else {
      const fd = file.fd!;
      file.fd = undefined;
      if (collected) record(file, file.hash!.digest('hex'));
      try {
        if ((file.mode & ~umask) !== file.mode) await fchmodP(fd, file.mode);
        await closeP(fd);
      } catch (error) {
        throw ioError(error, file.path.slice(root.length + 1));
      }
    }
    if (prepared.onProgress && bytes - lastProgress >= 1024 * 1024) {
      lastProgress = bytes;
      prepared.onProgress({ phase: 'extract', bytes, files });
    }
  };

  const events: TarEvent[] = [];
  const collect = (event: TarEvent): void => {
    events.push(event);
  };

  // One loop, start to end: when it stops (refusal, truncation, abort), nothing else is still
  // creating folders in `dir`, so the caller's cleanup removes everything (issue 16.2).
  const source = toArchiveStream(archive);
  const onAbort = (): void => {
    source.destroy(abortError(signal));
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const budget = (compressed: number): number =>
      Math.min(limits.maxTarBytes, Math.max(limits.ratioGraceBytes, compressed * limits.maxRatio));
    for await (const slice of inflateGzip(source, { signal, budget })) {
      if (signal?.aborted) throw abortError(signal);
      for (const piece of slice.pieces) {
        // Judged against the compressed bytes of whole slices (cut at fixed offsets), and on
        // pieces zlib cuts from them alone, so the verdict does not depend on how the source
        // chunked the bytes.
        tarBytes += piece.length;
        if (tarBytes > limits.maxTarBytes) {
          throw new StoreError(
            'ERR_ARCHIVE_TOO_LARGE',
            `more than ${limits.maxTarBytes} uncompressed bytes`,
          );
        }
        if (tarBytes > limits.ratioGraceBytes && tarBytes > slice.compressed * limits.maxRatio) {
          throw new StoreError(
            'ERR_ARCHIVE_RATIO',
            `compression ratio above ${limits.maxRatio}:1 (${tarBytes} bytes from ${slice.compressed}): a decompression bomb?`,
          );
        }
        events.length = 0;
        reader.push(piece, collect);
        for (const event of events) {
          if (event.kind === 'data') {
            if (current && !current.skip && current.chunks) current.chunks.push(event.chunk);
            else await onData(event.chunk);
          } else if (event.kind === 'entry') await onEntry(event.entry);
          else await onEntryEnd();
        }
        if (failure !== undefined) throw failure;
      }
    }
    reader.finish();
  } catch (caught) {
    if (signal?.aborted) throw abortError(signal);
    if (isStoreError(caught)) throw caught;
    throw new StoreError(
      'ERR_ARCHIVE_IO',
      `reading the archive failed: ${String((caught as Error)?.message ?? caught)}`,
      { cause: caught },
    );
  } finally {
    signal?.removeEventListener('abort', onAbort);
    source.destroy();
    const open = current && !current.skip ? current.fd : undefined;
    if (open !== undefined) await closeP(open).catch(() => undefined);
    await Promise.allSettled(inFlight);
  }
  if (failure !== undefined) throw failure;
  if ((prepared.stripPrefix !== undefined || prepared.stripTopFolder) && !matched) {
    throw new StoreError(
      'ERR_ARCHIVE_PREFIX_NOT_FOUND',
      `nothing in the archive under ${JSON.stringify(prepared.stripPrefix ?? '(top folder)')}`,
    );
  }
  prepared.onProgress?.({ phase: 'extract', bytes, files });
  const result: ExtractResult = { files, directories, bytes };
  if (reader.globalComment !== undefined) result.comment = reader.globalComment;
  if (collected) result.entries = collected;
  return result;
}

/**
 * Extracts a .tar.gz into `dest` atomically: into a staging folder next to it, which replaces
 * `dest` only once the whole archive has been read and judged. `dest` must be missing or empty
 * unless `force` is set. On failure nothing is left behind and `dest` is untouched.
 */
export async function extractArchive(
  archive: Readable | Buffer | Uint8Array,
  dest: string,
  options: ExtractOptions = {},
): Promise<ExtractResult> {
  const target = resolve(dest);
  if (!options.force && !(await isEmptyOrMissingDir(target))) {
    throw new StoreError(
      'ERR_TARGET_NOT_EMPTY',
      `${target} exists and is not empty (use force to replace it)`,
      {
        subject: target,
      },
    );
  }
  const staging = await makeStagingDir(dirname(target), `.${basename(target)}.staging-`);
  try {
    const result = await extractInto(archive, staging, options);
    if (!options.force) await rmdir(target).catch(() => undefined);
    await promoteStaging(staging, target);
    return result;
  } catch (error) {
    // The refusal is what the caller needs: a failing cleanup never replaces it.
    await removeTree(staging);
    throw error;
  }
}
