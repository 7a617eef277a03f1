import { createHmac, timingSafeEqual } from 'node:crypto';
import { dirname } from 'node:path';
import { writeFileAtomic } from './atomic-write.js';
import {
  errorCode,
  ownerOnlyFolderProblem,
  ownerOnlyProblem,
  prepareOwnerOnlyFolder,
} from './owner-only.js';
import { readBoundedFile } from './read-bounded-file.js';
import { isJsonObject, parseStrictJson } from './strict-json.js';

// One way to keep a cache entry that only a holder of a key can have written, for every cache
// under the user's home (trust-root's key sets, store-client's index): the two kept their own
// copies of this path, and the owner-only rules had already drifted once (owner-only.ts).

/** The bytes of a cache key, at least: shorter could be guessed. */
export const MAC_KEY_MIN_BYTES = 32;

/** How an entry of one cache is read and authenticated. */
export interface MacEntryFormat<T> {
  /** The key of the HMAC-SHA256 over `macInput(entry)`; at least {@link MAC_KEY_MIN_BYTES}. */
  key: Uint8Array;
  /** The file's size bound. */
  maxBytes: number;
  /** The JSON nesting bound (the strict parser's default otherwise). */
  maxDepth?: number;
  /**
   * The entry in the parsed document without its `mac` member, or `undefined` when the
   * document is not an entry of this format and version.
   */
  parse(document: Record<string, unknown>): T | undefined;
  /**
   * The text the MAC covers: every field of the entry in a fixed order with a label naming the
   * cache, so that an entry of one cache never verifies as one of another under the same key.
   */
  macInput(entry: T): string;
}

/** What a read found. `refused`: a file is there but must not be believed; `reason` says why. */
export type MacEntryRead<T> =
  { kind: 'hit'; entry: T } | { kind: 'absent' } | { kind: 'refused'; reason: string };

const MAC_PATTERN = /^[A-Za-z0-9_-]{43}$/;

const SHORT_KEY = `the cache key is shorter than ${MAC_KEY_MIN_BYTES} bytes`;

function macOf(key: Uint8Array, input: string): Buffer {
  return createHmac('sha256', key).update(input, 'utf8').digest();
}

/**
 * The entry at `file`, believed only when nobody but this user can have written it and a holder
 * of `format.key` did: the file is opened without following a symlink and never waited on (a
 * FIFO), must be a regular file within `maxBytes` that neither grew nor shrank while read, it and
 * its folder must belong to this user and be writable by nobody else, the text must be strict
 * JSON (a member named twice is refused) of the format (`parse`), and its `mac` must verify.
 * Never throws (but for what `parse` and `macInput` throw): a cache can only cost a download, so
 * every failure is `refused` with its reason, a key shorter than {@link MAC_KEY_MIN_BYTES} too.
 */
export async function readMacEntry<T>(
  file: string,
  format: MacEntryFormat<T>,
): Promise<MacEntryRead<T>> {
  const refused = (reason: string): MacEntryRead<T> => ({ kind: 'refused', reason });
  if (format.key.byteLength < MAC_KEY_MIN_BYTES) return refused(SHORT_KEY);
  const read = readBoundedFile(file, format.maxBytes);
  if (read.kind === 'absent') return { kind: 'absent' };
  if (read.kind === 'symlink') return refused('it is a symlink');
  if (read.kind === 'failed') return refused(`it cannot be read (${errorCode(read.cause)})`);
  const problem =
    ownerOnlyProblem(read.stats, 'file') ?? (await ownerOnlyFolderProblem(dirname(file)));
  if (problem !== undefined) return refused(problem);
  if (read.kind === 'too-large') return refused(`it is larger than ${format.maxBytes} bytes`);
  if (read.kind !== 'read') return refused('it grew while it was being read');
  let document: unknown;
  try {
    document = parseStrictJson(read.bytes.toString('utf8'), {
      maxBytes: format.maxBytes,
      ...(format.maxDepth === undefined ? {} : { maxDepth: format.maxDepth }),
      what: 'it',
    });
  } catch (error) {
    return refused((error as Error).message);
  }
  if (!isJsonObject(document)) return refused('it is not a cache entry of this version');
  const { mac, ...rest } = document;
  const entry = typeof mac === 'string' && MAC_PATTERN.test(mac) ? format.parse(rest) : undefined;
  if (entry === undefined) return refused('it is not a cache entry of this version');
  const expected = macOf(format.key, format.macInput(entry));
  const given = Buffer.from(mac as string, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return refused('its MAC does not verify with the cache key (this process did not write it)');
  return { kind: 'hit', entry };
}

/**
 * Writes `entry` with its `mac` to `file` atomically (a temporary file in the same folder, then a
 * rename), mode 0600, in a folder made or narrowed to 0700 (`prepareOwnerOnlyFolder`). Into a
 * folder that is a symlink or another user's nothing is written: it would never be read back.
 * Never throws: `ok: false` says why nothing was written; `tightenedFrom` is the folder's mode
 * when it had to be narrowed, for a warning.
 */
export async function writeMacEntry<T extends Record<string, unknown>>(
  file: string,
  entry: T,
  format: Pick<MacEntryFormat<T>, 'key' | 'macInput'>,
): Promise<{ ok: true; tightenedFrom?: number } | { ok: false; problem: string }> {
  if (format.key.byteLength < MAC_KEY_MIN_BYTES) return { ok: false, problem: SHORT_KEY };
  const mac = macOf(format.key, format.macInput(entry)).toString('base64url');
  const folder = await prepareOwnerOnlyFolder(dirname(file));
  if (!folder.ok) return folder;
  try {
    await writeFileAtomic(file, JSON.stringify({ ...entry, mac }), { mode: 0o600 });
  } catch (error) {
    return { ok: false, problem: errorCode(error) };
  }
  return folder.tightenedFrom === undefined
    ? { ok: true }
    : { ok: true, tightenedFrom: folder.tightenedFrom };
}
