import { createHash, hash, type Hash } from 'node:crypto';
import {
  chmodSync,
  close,
  closeSync,
  constants as fsConstants,
  fchmod,
  fchmodSync,
  mkdirSync,
  open,
  openSync,
  write,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { isStoreError, StoreError } from './errors.js';

// Writes judged entries into the staging folder (README "Extraction: what is refused", "How it
// writes"): folders 0755 whatever the archive says, files opened with O_WRONLY | O_CREAT |
// O_EXCL | O_NOFOLLOW and given 0755 or 0644 only. Nothing here judges an entry: the entry policy
// (entry-policy.ts) has already refused anything unsafe.

/** One extracted file, as a Pack digest v1 manifest entry. */
export interface ExtractedEntry {
  /** Relative, `/`-separated, NFC-normalised. */
  path: string;
  /** `x` when written 0755, else `f`. */
  mode: 'f' | 'x';
  sha256: string;
  size: number;
}

/** setuid, setgid, sticky and write bits for others are dropped: owner-exec decides. */
export function normalizeMode(mode: number): 0o755 | 0o644 {
  return mode & 0o100 ? 0o755 : 0o644;
}

/**
 * Files up to this size are gathered in memory and written at their end with synchronous calls;
 * larger ones are streamed to their descriptor through the thread pool. A pack is mostly small
 * files, and page-cache writes do not wait on the disk: a thread-pool trip per call cost more
 * than the call, and kept the pool from inflating the archive (issue 14, bench/install). The
 * caller (`readTar`) gives the event loop a turn every fraction of a millisecond.
 */
const SMALL_FILE = 1024 * 1024;
const OPEN_FLAGS =
  fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | (fsConstants.O_NOFOLLOW ?? 0);

let cachedUmask: number | undefined;
function currentUmask(): number {
  cachedUmask ??= process.umask();
  return cachedUmask;
}

// Callback fs calls wrapped by hand: a file is a handful of calls, and thousands of files pass.
function openP(path: string, mode: number): Promise<number> {
  return new Promise((res, rej) => open(path, OPEN_FLAGS, mode, (e, fd) => (e ? rej(e) : res(fd))));
}
function closeP(fd: number): Promise<void> {
  return new Promise((res, rej) => close(fd, (e) => (e ? rej(e) : res())));
}
function fchmodP(fd: number, mode: number): Promise<void> {
  return new Promise((res, rej) => fchmod(fd, mode, (e) => (e ? rej(e) : res())));
}
async function writeAll(fd: number, data: Buffer): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    offset += await new Promise<number>((res, rej) =>
      write(fd, data, offset, data.length - offset, null, (e, n) => (e ? rej(e) : res(n))),
    );
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // The write already failed: that is the error to report.
  }
}

/** An OS error while writing `path` (relative to the staging folder) as the package's error. */
function ioError(error: unknown, path: string): StoreError {
  if (isStoreError(error)) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EEXIST') {
    return new StoreError(
      'ERR_ARCHIVE_PATH_COLLISION',
      `${JSON.stringify(path)} already exists (a colliding name)`,
      { subject: path, cause: error },
    );
  }
  return new StoreError(
    'ERR_ARCHIVE_IO',
    `writing ${JSON.stringify(path)} failed: ${String(code ?? error)}`,
    { subject: path, cause: error },
  );
}

interface FileBeingWritten {
  /** Absolute. */
  path: string;
  /** Relative to the staging folder, `/`-separated: the manifest path and the error subject. */
  relative: string;
  mode: 0o755 | 0o644;
  size: number;
}

/** A small file: its content gathered, written in one go at its end. */
interface GatheredFile extends FileBeingWritten {
  chunks: Buffer[];
}

/** A large file: streamed to its open descriptor, hashed on the way. */
interface StreamedFile extends FileBeingWritten {
  fd: number;
  hash: Hash | undefined;
}

/**
 * The file writer of one extraction: creates the folders and files of judged entries under
 * `root` and, with `collectEntries`, hashes every file as it is written (the Pack digest v1
 * entries, without reading the result back). One file is open at a time, as the tar stream
 * delivers it.
 */
export class StagingWriter {
  /** Folders created. */
  directories = 0;
  /** With `collectEntries`: every file written, unsorted. */
  readonly entries: ExtractedEntry[] | undefined;
  private readonly umask = currentUmask();
  private gathered: GatheredFile | undefined;
  private streamed: StreamedFile | undefined;

  constructor(
    private readonly root: string,
    collectEntries: boolean,
  ) {
    this.entries = collectEntries ? [] : undefined;
  }

  /** Creates `folders` (each a list of path segments under `root`), in order, mode 0755. */
  makeDirectories(folders: string[][]): void {
    for (const folder of folders) {
      const path = join(this.root, ...folder);
      try {
        mkdirSync(path, 0o755);
        if ((0o755 & ~this.umask) !== 0o755) chmodSync(path, 0o755);
      } catch (error) {
        throw ioError(error, folder.join('/'));
      }
      this.directories++;
    }
  }

  /**
   * Starts the file at `segments` (its folders already made), `size` bytes, the archive's `mode`.
   * `subject` names the entry in an error opening it.
   */
  async beginFile(segments: string[], mode: number, size: number, subject: string): Promise<void> {
    const file = {
      path: join(this.root, ...segments),
      relative: segments.join('/'),
      mode: normalizeMode(mode),
      size,
    };
    if (size <= SMALL_FILE) {
      this.gathered = { ...file, chunks: [] };
      return;
    }
    try {
      const fd = await openP(file.path, file.mode);
      this.streamed = { ...file, fd, hash: this.entries ? createHash('sha256') : undefined };
    } catch (error) {
      throw ioError(error, subject);
    }
  }

  /** True while a small file is being read: `gather` takes its bytes synchronously. */
  get gathering(): boolean {
    return this.gathered !== undefined;
  }

  gather(chunk: Buffer): void {
    this.gathered!.chunks.push(chunk);
  }

  /** Bytes of the current file (ignored between files: skipped entries). */
  async write(chunk: Buffer): Promise<void> {
    if (this.gathered) return this.gather(chunk);
    const file = this.streamed;
    if (!file) return;
    file.hash?.update(chunk);
    try {
      await writeAll(file.fd, chunk);
    } catch (error) {
      throw ioError(error, file.relative);
    }
  }

  /**
   * The current entry ended: a small file is written whole, a large one is closed. Resolves
   * `true` when that entry was a file.
   */
  async endFile(): Promise<boolean> {
    const gathered = this.gathered;
    const streamed = this.streamed;
    this.gathered = undefined;
    this.streamed = undefined;
    if (gathered) {
      const data =
        gathered.chunks.length === 1
          ? gathered.chunks[0]!
          : Buffer.concat(gathered.chunks, gathered.size);
      this.record(gathered, this.entries ? hash('sha256', data, 'hex') : undefined);
      this.writeWhole(gathered, data);
    } else if (streamed) {
      this.record(streamed, streamed.hash?.digest('hex'));
      try {
        if ((streamed.mode & ~this.umask) !== streamed.mode)
          await fchmodP(streamed.fd, streamed.mode);
        await closeP(streamed.fd);
      } catch (error) {
        throw ioError(error, streamed.relative);
      }
    }
    return gathered !== undefined || streamed !== undefined;
  }

  /** After the last entry, or on failure: closes what is open. */
  async close(): Promise<void> {
    const open = this.streamed?.fd;
    this.streamed = undefined;
    this.gathered = undefined;
    if (open !== undefined) await closeP(open).catch(() => undefined);
  }

  private record(file: FileBeingWritten, sha256: string | undefined): void {
    if (!this.entries || sha256 === undefined) return;
    this.entries.push({
      path: file.relative.normalize('NFC'),
      mode: file.mode & 0o100 ? 'x' : 'f',
      sha256,
      size: file.size,
    });
  }

  private writeWhole(file: FileBeingWritten, data: Buffer): void {
    let fd: number | undefined;
    try {
      fd = openSync(file.path, OPEN_FLAGS, file.mode);
      for (let offset = 0; offset < data.length;) {
        offset += writeSync(fd, data, offset, data.length - offset);
      }
      if ((file.mode & ~this.umask) !== file.mode) fchmodSync(fd, file.mode);
      const opened = fd;
      fd = undefined;
      closeSync(opened);
    } catch (error) {
      if (fd !== undefined) closeQuietly(fd);
      throw ioError(error, file.relative);
    }
  }
}
