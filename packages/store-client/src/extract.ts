import { basename, dirname, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { EntryJudge, type ArchiveSelection, type EntryVerdict } from './entry-policy.js';
import { abortError, isStoreError, StoreError } from './errors.js';
import { resolveExtractLimits, type ExtractLimits } from './limits.js';
import { isEmptyOrMissingDir, makeStagingDir, promoteStaging, removeTree } from './staging.js';
import { StagingWriter, type ExtractedEntry } from './staging-writer.js';
import { inflateTar } from './tar-budget.js';
import { TarReader, type TarEntry, type TarEvent } from './tar-reader.js';

export { normalizeMode } from './staging-writer.js';
export type { ExtractedEntry } from './staging-writer.js';

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
   * result is known without reading it back (`digestManifest` of `@packwarden/pack-digest`, as
   * `installPack` does).
   */
  collectEntries?: boolean;
  signal?: AbortSignal;
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
/** `onProgress` is called each time about this much more content is written. */
const PROGRESS_BYTES = 1024 * 1024;
/**
 * Files are written with synchronous calls (`StagingWriter`), and the archive is read and inflated
 * ahead on the thread pool (`inflateGzip`), whose reads and zlib calls need the event loop to
 * complete: the loop below gives it a turn this often, so that both go on at once and a caller's
 * other work is never held for longer (issue 14, bench/install).
 */
const TURN_EVERY_MS = 0.25;

/** A Buffer becomes a stream of 64 KiB chunks (never one copy of a large archive in one piece). */
function toArchiveStream(archive: Readable | Buffer | Uint8Array): Readable {
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

/** What the tar entry reader loop hands each event to, in archive order. */
interface TarHandlers {
  entry(entry: TarEntry): Promise<void>;
  data(chunk: Buffer): Promise<void> | void;
  entryEnd(): Promise<void>;
}

/**
 * The tar entry reader loop: inflates the archive within its size and ratio budget
 * (`inflateTar`), parses it (`TarReader`) and awaits each handler in turn, then checks the end
 * of the archive. Every failure is a `StoreError`: an abort is `ERR_ABORTED`, anything the
 * handlers or the stream threw that is not a `StoreError` is `ERR_ARCHIVE_IO`.
 */
async function readTar(
  archive: Readable | Buffer | Uint8Array,
  reader: TarReader,
  limits: ExtractLimits,
  signal: AbortSignal | undefined,
  handlers: TarHandlers,
): Promise<void> {
  const events: TarEvent[] = [];
  const collect = (event: TarEvent): void => {
    events.push(event);
  };
  const source = toArchiveStream(archive);
  const onAbort = (): void => {
    source.destroy(abortError(signal));
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  let turnDue = performance.now() + TURN_EVERY_MS;
  try {
    for await (const piece of inflateTar(source, limits, signal)) {
      events.length = 0;
      reader.push(piece, collect);
      for (const event of events) {
        if (performance.now() >= turnDue) {
          await new Promise((resolve) => setImmediate(resolve));
          turnDue = performance.now() + TURN_EVERY_MS;
        }
        if (event.kind === 'data') await handlers.data(event.chunk);
        else if (event.kind === 'entry') await handlers.entry(event.entry);
        else await handlers.entryEnd();
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
  }
}

/** Carries out a verdict of the entry policy: makes its folders, then starts its file. */
async function place(verdict: EntryVerdict, entry: TarEntry, writer: StagingWriter): Promise<void> {
  if (verdict.kind === 'skip') return;
  writer.makeDirectories(verdict.create);
  if (verdict.kind === 'file') {
    await writer.beginFile(verdict.segments, entry.mode, entry.size, verdict.relative);
  }
}

/**
 * Extracts a .tar.gz into `dir`, an existing empty folder the caller owns (a staging folder).
 * On failure `dir` may hold part of the archive: the caller removes it.
 *
 * A pipeline: the tar entry reader loop (`readTar`, with the size and ratio accountant
 * `inflateTar`) hands each header to the entry policy (`EntryJudge`) and each judged entry and
 * its bytes to the file writer (`StagingWriter`).
 */
export async function extractInto(
  archive: Readable | Buffer | Uint8Array,
  dir: string,
  options: ExtractOptions = {},
): Promise<ExtractResult> {
  const limits = resolveExtractLimits(options.limits);
  const selection: ArchiveSelection = {
    stripPrefix: normalizePrefix(options.stripPrefix),
    stripTopFolder: options.stripTopFolder ?? false,
  };
  const { onProgress, signal } = options;
  if (signal?.aborted) throw abortError(signal);
  const reader = new TarReader(limits);
  const judge = new EntryJudge(limits, selection);
  const writer = new StagingWriter(resolve(dir), options.collectEntries ?? false);
  let reported = 0;
  // One loop, start to end: when it stops (refusal, truncation, abort), nothing else is still
  // creating folders in `dir`, so the caller's cleanup removes everything (issue 16.2).
  try {
    await readTar(archive, reader, limits, signal, {
      entry: (entry) => place(judge.judge(entry), entry, writer),
      data: (chunk) => (writer.gathering ? writer.gather(chunk) : writer.write(chunk)),
      entryEnd: async () => {
        if (!(await writer.endFile())) return;
        if (onProgress && judge.bytes - reported >= PROGRESS_BYTES) {
          reported = judge.bytes;
          onProgress({ phase: 'extract', bytes: judge.bytes, files: judge.files });
        }
      },
    });
  } finally {
    await writer.close();
  }
  judge.finish();
  const { files, bytes } = judge;
  onProgress?.({ phase: 'extract', bytes, files });
  const result: ExtractResult = { files, directories: writer.directories, bytes };
  if (reader.globalComment !== undefined) result.comment = reader.globalComment;
  if (writer.entries) result.entries = writer.entries;
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
    await promoteStaging(staging, target, {
      replace: options.force === true,
      // Judged again at the rename: another process may have filled `dest` meanwhile.
      taken: () =>
        new StoreError(
          'ERR_TARGET_NOT_EMPTY',
          `${target} is not empty any more (something was written there while the archive was extracted); nothing was replaced (use force to replace it)`,
          { subject: target },
        ),
    });
    return result;
  } catch (error) {
    // The refusal is what the caller needs: a failing cleanup never replaces it.
    await removeTree(staging);
    throw error;
  }
}
