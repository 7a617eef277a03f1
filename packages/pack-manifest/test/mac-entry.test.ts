// readMacEntry / writeMacEntry: the one path of the caches kept under the user's home, attacked
// as the holder of a writable state folder would (planted, replayed, tampered, linked files).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  readMacEntry,
  writeMacEntry,
  type MacEntryFormat,
  type MacEntryRead,
} from '@packwarden/pack-manifest/fs';

interface Note extends Record<string, unknown> {
  version: 1;
  url: string;
  body: string;
}

function format(key: Uint8Array, label = 'test-cache'): MacEntryFormat<Note> {
  return {
    key,
    maxBytes: 4096,
    parse: (document) => {
      const { version, url, body, ...rest } = document;
      return version === 1 &&
        typeof url === 'string' &&
        typeof body === 'string' &&
        Object.keys(rest).length === 0
        ? { version, url, body }
        : undefined;
    },
    macInput: (entry) => JSON.stringify([label, entry.version, entry.url, entry.body]),
  };
}

const note: Note = { version: 1, url: 'https://keys.example/jwks.json', body: '{"keys":[]}' };
const refusedFor = (read: MacEntryRead<Note>) =>
  read.kind === 'refused' ? read.reason : read.kind;

let root: string;
let folder: string;
let file: string;
const key = randomBytes(32);
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'pw-mac-entry-'));
  folder = join(root, 'cache');
  file = join(folder, 'entry.json');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('writeMacEntry then readMacEntry', () => {
  it('gives back what was written, as a 0600 file in a 0700 folder', async () => {
    expect(await readMacEntry(file, format(key))).toEqual({ kind: 'absent' });
    expect(await writeMacEntry(file, note, format(key))).toEqual({ ok: true });
    expect(statSync(folder).mode & 0o777).toBe(0o700);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(await readMacEntry(file, format(key))).toEqual({ kind: 'hit', entry: note });
    expect(readdirSync(folder)).toEqual(['entry.json']);
  });

  it('narrows a folder others can write to 0700 and says from what', async () => {
    mkdirSync(folder);
    chmodSync(folder, 0o775);
    expect(await writeMacEntry(file, note, format(key))).toEqual({
      ok: true,
      tightenedFrom: 0o775,
    });
    expect(statSync(folder).mode & 0o777).toBe(0o700);
  });
});

describe('readMacEntry refuses what a holder of the key did not write', () => {
  it('another key, or the same key for another cache', async () => {
    await writeMacEntry(file, note, format(key));
    expect(refusedFor(await readMacEntry(file, format(randomBytes(32))))).toMatch(
      /MAC does not verify/,
    );
    expect(refusedFor(await readMacEntry(file, format(key, 'other-cache')))).toMatch(
      /MAC does not verify/,
    );
  });

  it('a field changed after writing, a MAC moved to another entry, a MAC left out', async () => {
    await writeMacEntry(file, note, format(key));
    const written = JSON.parse(readFileSync(file, 'utf8')) as Note & { mac: string };
    writeFileSync(file, JSON.stringify({ ...written, body: '{"keys":[{"kty":"EC"}]}' }));
    expect(refusedFor(await readMacEntry(file, format(key)))).toMatch(/MAC does not verify/);
    writeFileSync(file, JSON.stringify({ ...written, mac: undefined }));
    expect(refusedFor(await readMacEntry(file, format(key)))).toMatch(/not a cache entry/);
    writeFileSync(file, JSON.stringify({ ...written, mac: `${written.mac}A` }));
    expect(refusedFor(await readMacEntry(file, format(key)))).toMatch(/not a cache entry/);
  });

  it('a member named twice, which a lax parser would read as its last value', async () => {
    await writeMacEntry(file, note, format(key));
    const text = readFileSync(file, 'utf8');
    writeFileSync(file, text.replace('"body":', '"body":"{\\"keys\\":[1]}","body":'));
    expect(refusedFor(await readMacEntry(file, format(key)))).toBe('it repeats the member "body"');
  });

  it('a symlink to a good entry, a FIFO, a file too large', async () => {
    await writeMacEntry(file, note, format(key));
    const other = join(folder, 'other.json');
    symlinkSync(file, other);
    expect(refusedFor(await readMacEntry(other, format(key)))).toBe('it is a symlink');
    const fifo = join(folder, 'fifo.json');
    execFileSync('mkfifo', [fifo]);
    expect(refusedFor(await readMacEntry(fifo, format(key)))).toMatch(/not a regular file/);
    writeFileSync(file, ' '.repeat(4097));
    chmodSync(file, 0o600);
    expect(refusedFor(await readMacEntry(file, format(key)))).toBe('it is larger than 4096 bytes');
  });

  it('a good entry in a file or folder others can write', async () => {
    await writeMacEntry(file, note, format(key));
    chmodSync(file, 0o666);
    expect(refusedFor(await readMacEntry(file, format(key)))).toMatch(
      /file is writable by group or others/,
    );
    chmodSync(file, 0o600);
    chmodSync(folder, 0o777);
    expect(refusedFor(await readMacEntry(file, format(key)))).toMatch(
      /folder is writable by group or others/,
    );
  });

  it('a key shorter than 32 bytes: nothing read, nothing written', async () => {
    const short = randomBytes(31);
    expect(await writeMacEntry(file, note, format(short))).toEqual({
      ok: false,
      problem: 'the cache key is shorter than 32 bytes',
    });
    expect(existsSync(file)).toBe(false);
    await writeMacEntry(file, note, format(key));
    expect(refusedFor(await readMacEntry(file, format(short)))).toMatch(/shorter than 32 bytes/);
  });
});

describe('writeMacEntry never writes through a link', () => {
  it('into a folder that is a symlink: nothing written there', async () => {
    const elsewhere = join(root, 'elsewhere');
    mkdirSync(elsewhere, { mode: 0o700 });
    symlinkSync(elsewhere, folder);
    const written = await writeMacEntry(file, note, format(key));
    expect(written.ok).toBe(false);
    expect(readdirSync(elsewhere)).toEqual([]);
  });
});
