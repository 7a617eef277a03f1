import { StoreError, type StoreErrorCode } from './errors.js';

// A strict, streaming tar reader. tar-stream's parser is lenient in ways an extractor of hostile
// archives cannot afford (names decoded with U+FFFD replacement, repeated PAX keys silently
// last-wins, PAX sizes parsed with parseInt, no end-of-archive check, unbounded meta headers),
// so archives are read here and tar-stream is used to write them.

export type TarEntryType =
  | 'file'
  | 'directory'
  | 'symlink'
  | 'hardlink'
  | 'character-device'
  | 'block-device'
  | 'fifo'
  | 'sparse'
  | 'other';

export interface TarEntry {
  type: TarEntryType;
  /** The raw type flag. */
  typeflag: string;
  /** The final path: PAX `path`, else GNU long name, else ustar prefix + name. Not yet judged. */
  path: string;
  size: number;
  mode: number;
  /** Link target (PAX `linkpath`, GNU long link, or the header's), when there is one. */
  linkname?: string;
}

const ENTRY_TYPES: Record<string, TarEntryType> = {
  '0': 'file',
  '\u0000': 'file',
  '5': 'directory',
  '1': 'hardlink',
  '2': 'symlink',
  '3': 'character-device',
  '4': 'block-device',
  '6': 'fifo',
  S: 'sparse',
};

export type TarEvent =
  { kind: 'entry'; entry: TarEntry } | { kind: 'data'; chunk: Buffer } | { kind: 'entry-end' };

export interface TarReaderLimits {
  maxMetaBytes: number;
}

const BLOCK = 512;
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function fail(code: StoreErrorCode, message: string, subject?: string): never {
  throw new StoreError(code, message, subject === undefined ? {} : { subject });
}

function decodeUtf8(bytes: Uint8Array, what: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    return fail('ERR_ARCHIVE_PATH_UNSAFE', `${what} is not valid UTF-8`);
  }
}

function cString(block: Buffer, start: number, length: number): Buffer {
  const field = block.subarray(start, start + length);
  const nul = field.indexOf(0);
  return nul < 0 ? field : field.subarray(0, nul);
}

/** Strict octal: optional leading spaces, octal digits, then only NULs or spaces. */
function parseOctal(block: Buffer, start: number, length: number, what: string): number {
  const field = block.subarray(start, start + length);
  let i = 0;
  while (i < field.length && field[i] === 0x20) i++;
  let value = 0;
  let digits = 0;
  for (; i < field.length; i++) {
    const c = field[i]!;
    if (c < 0x30 || c > 0x37) break;
    value = value * 8 + (c - 0x30);
    digits++;
  }
  for (; i < field.length; i++) {
    const c = field[i]!;
    if (c !== 0 && c !== 0x20) fail('ERR_ARCHIVE_HEADER_INVALID', `${what} field is not a number`);
  }
  if (digits === 0 && field.some((c) => c !== 0 && c !== 0x20)) {
    fail('ERR_ARCHIVE_HEADER_INVALID', `${what} field is not a number`);
  }
  return value;
}

function parseSize(block: Buffer): number {
  const first = block[124]!;
  if (first & 0x80) {
    // GNU base-256: the sign bit set means negative.
    if (first & 0x40) fail('ERR_ARCHIVE_HEADER_INVALID', 'negative entry size');
    let value = first & 0x3f;
    for (let i = 125; i < 136; i++) {
      value = value * 256 + block[i]!;
      if (value > Number.MAX_SAFE_INTEGER)
        fail('ERR_ARCHIVE_HEADER_INVALID', 'entry size overflows');
    }
    return value;
  }
  return parseOctal(block, 124, 12, 'size');
}

function checksumMatches(block: Buffer): boolean {
  const stored = parseOctal(block, 148, 8, 'checksum');
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < BLOCK; i++) {
    const c = i >= 148 && i < 156 ? 0x20 : block[i]!;
    unsigned += c;
    signed += c > 127 ? c - 256 : c;
  }
  return stored === unsigned || stored === signed;
}

function isZeroBlock(block: Buffer): boolean {
  for (let i = 0; i < BLOCK; i++) if (block[i] !== 0) return false;
  return true;
}

function parseDecimal(value: string, what: string): number {
  if (!/^\d{1,16}$/.test(value)) fail('ERR_ARCHIVE_HEADER_INVALID', `PAX ${what} is not a number`);
  const n = Number(value);
  if (!Number.isSafeInteger(n)) fail('ERR_ARCHIVE_HEADER_INVALID', `PAX ${what} overflows`);
  return n;
}

/** `<len> <key>=<value>\n` records; every byte accounted for, no key twice. */
function parsePax(body: Buffer): Map<string, string> {
  const records = new Map<string, string>();
  let offset = 0;
  while (offset < body.length) {
    // Some writers pad the body with NULs; only NULs may follow the last record.
    if (body[offset] === 0) {
      if (body.subarray(offset).some((c) => c !== 0)) {
        fail('ERR_ARCHIVE_HEADER_INVALID', 'PAX header has data after its padding');
      }
      break;
    }
    const space = body.indexOf(0x20, offset);
    if (space < 0 || space - offset > 8)
      fail('ERR_ARCHIVE_HEADER_INVALID', 'malformed PAX record length');
    const lengthText = body.toString('latin1', offset, space);
    if (!/^[1-9]\d*$/.test(lengthText))
      fail('ERR_ARCHIVE_HEADER_INVALID', 'malformed PAX record length');
    const length = Number(lengthText);
    const end = offset + length;
    if (end > body.length || end <= space + 1 || body[end - 1] !== 0x0a) {
      fail('ERR_ARCHIVE_HEADER_INVALID', 'PAX record length does not match its content');
    }
    const record = decodeUtf8(body.subarray(space + 1, end - 1), 'a PAX record');
    const eq = record.indexOf('=');
    if (eq <= 0) fail('ERR_ARCHIVE_HEADER_INVALID', 'PAX record without a key');
    const key = record.slice(0, eq);
    if (records.has(key))
      fail('ERR_ARCHIVE_HEADER_INVALID', `PAX key ${JSON.stringify(key)} appears twice`);
    records.set(key, record.slice(eq + 1));
    offset = end;
  }
  return records;
}

type State = 'header' | 'meta' | 'data' | 'padding' | 'second-zero' | 'done';

/**
 * Feed it the uncompressed tar stream with `push`; it calls `emit` synchronously for each entry,
 * each slice of file data and each entry's end. `finish` throws unless the archive ended with
 * its two zero blocks. Anything but zeros after them is trailing data.
 */
export class TarReader {
  private state: State = 'header';
  private readonly header = Buffer.alloc(BLOCK);
  private headerFill = 0;
  private meta: Buffer | undefined;
  private metaFill = 0;
  private metaType = 0;
  private remaining = 0;
  private padding = 0;
  private pax: Map<string, string> | undefined;
  private longName: string | undefined;
  private longLink: string | undefined;
  /** Text of the global PAX header's `comment` (GitHub tarballs carry the commit there). */
  globalComment: string | undefined;

  constructor(private readonly limits: TarReaderLimits) {}

  get ended(): boolean {
    return this.state === 'done';
  }

  push(chunk: Buffer, emit: (event: TarEvent) => void): void {
    let offset = 0;
    while (offset < chunk.length) {
      switch (this.state) {
        case 'header':
        case 'second-zero': {
          const take = Math.min(BLOCK - this.headerFill, chunk.length - offset);
          chunk.copy(this.header, this.headerFill, offset, offset + take);
          this.headerFill += take;
          offset += take;
          if (this.headerFill === BLOCK) {
            this.headerFill = 0;
            this.onHeader(emit);
          }
          break;
        }
        case 'meta': {
          const meta = this.meta!;
          const take = Math.min(meta.length - this.metaFill, chunk.length - offset);
          chunk.copy(meta, this.metaFill, offset, offset + take);
          this.metaFill += take;
          offset += take;
          if (this.metaFill === meta.length) this.onMeta();
          break;
        }
        case 'data': {
          const take = Math.min(this.remaining, chunk.length - offset);
          emit({ kind: 'data', chunk: chunk.subarray(offset, offset + take) });
          this.remaining -= take;
          offset += take;
          if (this.remaining === 0) {
            emit({ kind: 'entry-end' });
            this.state = this.padding > 0 ? 'padding' : 'header';
          }
          break;
        }
        case 'padding': {
          const take = Math.min(this.padding, chunk.length - offset);
          this.padding -= take;
          offset += take;
          if (this.padding === 0) this.state = 'header';
          break;
        }
        case 'done': {
          for (let i = offset; i < chunk.length; i++) {
            if (chunk[i] !== 0)
              fail('ERR_ARCHIVE_TRAILING_DATA', 'data after the end of the archive');
          }
          offset = chunk.length;
          break;
        }
      }
    }
  }

  finish(): void {
    if (this.state !== 'done') {
      fail(
        'ERR_ARCHIVE_TRUNCATED',
        'the archive ends before its end-of-archive marker (truncated)',
      );
    }
  }

  private onHeader(emit: (event: TarEvent) => void): void {
    const block = this.header;
    if (isZeroBlock(block)) {
      if (this.pax || this.longName !== undefined || this.longLink !== undefined) {
        fail('ERR_ARCHIVE_HEADER_INVALID', 'an extended header is not followed by an entry');
      }
      this.state = this.state === 'second-zero' ? 'done' : 'second-zero';
      return;
    }
    if (this.state === 'second-zero') {
      fail('ERR_ARCHIVE_HEADER_INVALID', 'a lone zero block in the middle of the archive');
    }
    if (!checksumMatches(block)) fail('ERR_ARCHIVE_BAD_CHECKSUM', 'header checksum mismatch');
    const magic = block.toString('latin1', 257, 265);
    const ustar = magic === 'ustar\u000000';
    if (!ustar && magic !== 'ustar  \u0000') {
      fail('ERR_ARCHIVE_HEADER_INVALID', 'not a ustar, pax or GNU tar header');
    }
    const typeflag = block[156]!;
    const size = parseSize(block);
    const type = String.fromCharCode(typeflag);

    if (type === 'x' || type === 'g' || type === 'L' || type === 'K') {
      if (size > this.limits.maxMetaBytes) {
        fail(
          'ERR_ARCHIVE_META_TOO_LARGE',
          `a ${size}-byte extended header (limit ${this.limits.maxMetaBytes})`,
        );
      }
      if (type === 'x' && this.pax)
        fail('ERR_ARCHIVE_HEADER_INVALID', 'two PAX headers for one entry');
      if (type === 'L' && this.longName !== undefined) {
        fail('ERR_ARCHIVE_HEADER_INVALID', 'two GNU long-name headers for one entry');
      }
      if (type === 'K' && this.longLink !== undefined) {
        fail('ERR_ARCHIVE_HEADER_INVALID', 'two GNU long-link headers for one entry');
      }
      if (
        type === 'g' &&
        (this.pax || this.longName !== undefined || this.longLink !== undefined)
      ) {
        fail(
          'ERR_ARCHIVE_HEADER_INVALID',
          'a global header between an extended header and its entry',
        );
      }
      this.metaType = typeflag;
      this.meta = Buffer.alloc(size);
      this.metaFill = 0;
      this.padding = (BLOCK - (size % BLOCK)) % BLOCK;
      this.state = 'meta';
      if (size === 0) this.onMeta();
      return;
    }

    let kind = ENTRY_TYPES[type] ?? 'other';
    const mode = parseOctal(block, 100, 8, 'mode');
    let headerPath = decodeUtf8(cString(block, 0, 100), 'an entry name');
    if (ustar) {
      const prefix = cString(block, 345, 155);
      if (prefix.length > 0) headerPath = `${decodeUtf8(prefix, 'an entry name')}/${headerPath}`;
    }
    const pax = this.pax;
    let path = pax?.get('path') ?? this.longName ?? headerPath;
    let entrySize = size;
    const paxSize = pax?.get('size');
    if (paxSize !== undefined) {
      const n = parseDecimal(paxSize, 'size');
      if (n !== size) {
        fail(
          'ERR_ARCHIVE_PAX_SIZE_MISMATCH',
          `PAX size ${n} differs from the header size ${size}`,
          path,
        );
      }
      entrySize = n;
    }
    const headerLink = cString(block, 157, 100);
    const linkname =
      pax?.get('linkpath') ??
      this.longLink ??
      (headerLink.length > 0 && kind !== 'file' && kind !== 'directory'
        ? headerLink.toString('utf8')
        : undefined);
    this.pax = undefined;
    this.longName = undefined;
    this.longLink = undefined;
    if (pax && [...pax.keys()].some((key) => key.startsWith('GNU.sparse.'))) kind = 'sparse';

    let entryType: TarEntryType = kind;
    if (entryType === 'file' && path.endsWith('/')) {
      fail('ERR_ARCHIVE_HEADER_INVALID', 'a regular file whose name ends in "/"', path);
    }
    if (entryType === 'directory') {
      if (entrySize !== 0)
        fail('ERR_ARCHIVE_HEADER_INVALID', 'a directory entry with content', path);
      path = path.replace(/\/+$/, '');
      entryType = 'directory';
    }
    const entry: TarEntry = { type: entryType, typeflag: type, path, size: entrySize, mode };
    if (linkname !== undefined) entry.linkname = linkname;
    emit({ kind: 'entry', entry });
    if (entrySize === 0) {
      emit({ kind: 'entry-end' });
      this.state = 'header';
      return;
    }
    this.remaining = entrySize;
    this.padding = (BLOCK - (entrySize % BLOCK)) % BLOCK;
    this.state = 'data';
  }

  private onMeta(): void {
    const body = this.meta!;
    this.meta = undefined;
    this.state = this.padding > 0 ? 'padding' : 'header';
    if (this.metaType === 0x4c /* L */) {
      let end = body.length;
      while (end > 0 && body[end - 1] === 0) end--;
      const name = body.subarray(0, end);
      if (name.includes(0)) fail('ERR_ARCHIVE_PATH_UNSAFE', 'a GNU long name containing NUL');
      this.longName = decodeUtf8(name, 'a GNU long name');
      return;
    }
    if (this.metaType === 0x4b /* K */) {
      let end = body.length;
      while (end > 0 && body[end - 1] === 0) end--;
      this.longLink = body.subarray(0, end).toString('utf8');
      return;
    }
    const records = parsePax(body);
    if (this.metaType === 0x67 /* g */) {
      for (const key of ['path', 'linkpath', 'size']) {
        if (records.has(key)) {
          // Extractors disagree on whether a global path applies to every later entry; an
          // archive whose meaning depends on the extractor is refused.
          fail('ERR_ARCHIVE_HEADER_INVALID', `a global PAX header sets ${key}`, records.get(key));
        }
      }
      const comment = records.get('comment');
      if (comment !== undefined) this.globalComment = comment;
      return;
    }
    this.pax = records;
  }
}
