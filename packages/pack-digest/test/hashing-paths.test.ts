import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, test } from 'vitest';
import {
  computePackDigest,
  digestManifest,
  formatManifest,
  parseManifestLines,
} from '../src/index.js';
import type { PackManifestEntry } from '../src/index.js';
import { makeTree, removeTree, type TreeFile } from './tree.js';

// The paths through the hashing code that issue 14's speed work added or changed: the calling
// thread handing the rest of a pack to worker threads once it has seen 24 MiB, the 128 KiB read
// buffer, and the manifest hashed in chunks. Each must give the digest SPEC.md defines.

const KiB = 1024;
const MiB = 1024 * KiB;
const roots: string[] = [];
afterEach(() => roots.splice(0).forEach(removeTree));

function sha256(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** A block whose bytes depend on `seed`, so that no two files hash alike. */
function block(size: number, seed: number): Buffer {
  const bytes = Buffer.alloc(size);
  for (let i = 0; i + 4 <= size; i += 4096) bytes.writeUInt32LE((seed * 2654435761 + i) >>> 0, i);
  return bytes;
}

describe('the calling thread hands the rest of a pack to the threads at 24 MiB', () => {
  test('a file that crosses the mark mid-pack, and every file after it, hashed once each', async () => {
    const files: TreeFile[] = [
      { path: 'a/one.bin', content: block(3 * MiB, 1) },
      { path: 'a/two.bin', content: block(2 * MiB, 2), mode: 'x' },
      { path: 'b/crosses.bin', content: block(21 * MiB, 3) },
      { path: 'c/after-1.bin', content: block(MiB + 3, 4) },
      { path: 'c/after-2.bin', content: block(17, 5), mode: 'x' },
      { path: 'c/after-3.bin', content: '' },
      { path: 'link', symlink: 'a/one.bin' },
    ];
    const root = makeTree(files);
    roots.push(root);

    const handedOver = await computePackDigest(root, { threads: 2 });
    const single = await computePackDigest(root, { parallel: 'never' });

    expect(handedOver.entries).toEqual(single.entries);
    expect(handedOver.digest).toBe(single.digest);
    expect(handedOver.entries.map((entry) => entry.path)).toEqual([
      'a/one.bin',
      'a/two.bin',
      'b/crosses.bin',
      'c/after-1.bin',
      'c/after-2.bin',
      'c/after-3.bin',
      'link',
    ]);
    for (const entry of handedOver.entries.filter((e) => e.mode !== 'l')) {
      const bytes = readFileSync(join(root, entry.path));
      expect(entry.sha256, entry.path).toBe(sha256(bytes));
      expect(entry.size, entry.path).toBe(bytes.length);
    }
    expect(handedOver.entries.find((e) => e.path === 'a/two.bin')?.mode).toBe('x');
    expect(handedOver.entries.find((e) => e.path === 'c/after-2.bin')?.mode).toBe('x');
    expect(handedOver.totalBytes).toBe(3 * MiB + 2 * MiB + 21 * MiB + MiB + 3 + 17 + 9);
    expect(handedOver.digest).toBe(sha256(formatManifest(handedOver.entries)));
  });

  test('the first file alone over the mark goes to the threads with the rest', async () => {
    const root = makeTree([
      { path: 'huge.bin', content: block(25 * MiB, 7) },
      { path: 'small.txt', content: 'small\n' },
    ]);
    roots.push(root);
    const auto = await computePackDigest(root, { threads: 2 });
    expect(auto.entries.map((e) => [e.path, e.sha256])).toEqual([
      ['huge.bin', sha256(readFileSync(join(root, 'huge.bin')))],
      ['small.txt', sha256('small\n')],
    ]);
    expect(auto.digest).toBe((await computePackDigest(root, { parallel: 'never' })).digest);
  });
});

describe('the 128 KiB read buffer', () => {
  test.each([128 * KiB - 1, 128 * KiB, 128 * KiB + 1, 256 * KiB, 256 * KiB + 5])(
    'a file of %i bytes hashes to its SHA-256 on every path',
    async (size) => {
      const content = block(size, size);
      const root = makeTree([{ path: 'f.bin', content }]);
      roots.push(root);
      for (const options of [
        { parallel: 'never' as const },
        { parallel: 'always' as const, threads: 2 },
      ]) {
        const [entry] = (await computePackDigest(root, options)).entries;
        expect(entry?.sha256).toBe(sha256(content));
        expect(entry?.size).toBe(size);
      }
    },
  );
});

describe('digestManifest hashes the manifest text in chunks', () => {
  test('a manifest far larger than one chunk digests to the SHA-256 of its text', () => {
    const entries: PackManifestEntry[] = Array.from({ length: 3000 }, (_, i) => ({
      path: `skills/${String(i).padStart(5, '0')}/${'é'.repeat(i % 40)}${'n'.repeat(i % 97)}.md`,
      mode: i % 3 === 0 ? 'x' : 'f',
      sha256: sha256(String(i)),
    }));
    const text = formatManifest(entries);
    expect(text.length).toBeGreaterThan(4 * 65_536);
    expect(digestManifest(entries)).toBe(sha256(text));
    expect(digestManifest(parseManifestLines(text.split('\n').slice(1, -1)))).toBe(sha256(text));
  });

  test('the empty manifest is the version line alone', () => {
    expect(digestManifest([])).toBe(sha256('packwarden-digest/1\n'));
  });
});

describe('parseManifestLines orders ASCII and non-ASCII paths by UTF-8 bytes', () => {
  const segment = fc.stringMatching(/^[a-zA-Z0-9~ _é中\u{1F600}-]{1,6}$/u);
  test('accepts byte order, refuses any adjacent swap, whatever mix of scripts', () => {
    fc.assert(
      fc.property(fc.uniqueArray(segment, { minLength: 2, maxLength: 12 }), (names) => {
        const paths = names
          .map((name) => name.normalize('NFC'))
          .filter((name) => name.trim() === name && name !== '.' && name !== '..');
        const sorted = [...new Set(paths)].sort((a, b) =>
          Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')),
        );
        fc.pre(sorted.length >= 2);
        const line = (path: string) => `${sha256(path)} f ${path}`;
        expect(parseManifestLines(sorted.map(line)).map((e) => e.path)).toEqual(sorted);
        for (let i = 0; i + 1 < sorted.length; i++) {
          const swapped = [...sorted];
          [swapped[i], swapped[i + 1]] = [swapped[i + 1]!, swapped[i]!];
          expect(() => parseManifestLines(swapped.map(line))).toThrow(
            expect.objectContaining({ code: 'ERR_DIGEST_MANIFEST_ORDER' }),
          );
        }
      }),
      { numRuns: 300 },
    );
  });

  test.each([
    ['a\u0301', 'path is not NFC-normalised'],
    ['tab\there', 'control character in path'],
    ['lone\ud800', 'path is not valid Unicode'],
    ['a//b', 'bad path segment ""'],
  ])('still refuses %j outside printable ASCII: %s', (path, problem) => {
    expect(() => parseManifestLines([`${sha256('x')} f ${path}`])).toThrow(problem);
  });
});

// The walk reads names as strings and reads a folder again as bytes only where a name holds
// U+FFFD; printable-ASCII names skip decoding and NFC; path lengths are summed per segment.
describe('the walk: names read as strings, bytes only where needed', () => {
  test('a name holding U+FFFD itself is valid UTF-8: kept, beside ASCII and NFD names', async () => {
    const root = makeTree([
      { path: 'skills/\ufffd.md', content: 'replacement' },
      { path: 'skills/plain.md', content: 'plain' },
      { path: 'skills/cafe\u0301.md', content: 'nfd' },
      { path: '\ufffd/inner.md', content: 'inner', mode: 'x' },
    ]);
    roots.push(root);
    const result = await computePackDigest(root);
    expect(result.entries.map((e) => [e.path, e.mode, e.sha256])).toEqual([
      ['skills/caf\u00e9.md', 'f', sha256('nfd')],
      ['skills/plain.md', 'f', sha256('plain')],
      ['skills/\ufffd.md', 'f', sha256('replacement')],
      ['\ufffd/inner.md', 'x', sha256('inner')],
    ]);
    expect(result.digest).toBe(sha256(formatManifest(result.entries)));
  });

  test('beside a real U+FFFD, bytes that are not UTF-8 and control characters are still refused', async () => {
    for (const [bad, code] of [
      [Buffer.from([0x66, 0xff]), 'ERR_DIGEST_INVALID_UTF8_NAME'],
      [Buffer.from('tab\there'), 'ERR_DIGEST_CONTROL_CHARACTER'],
    ] as const) {
      const root = makeTree([{ path: 'd/\ufffd.md', content: 'x' }]);
      roots.push(root);
      writeFileSync(Buffer.concat([Buffer.from(join(root, 'd') + '/'), bad]), 'x');
      await expect(computePackDigest(root)).rejects.toMatchObject({ code });
    }
  });

  test.each([
    ['\u00e9/abc', 6],
    ['ab/\u00e9', 5],
    ['\u00e9/\u00e9/a', 7],
  ])(
    'maxPathBytes counts %j as %i UTF-8 bytes, ASCII and non-ASCII segments mixed',
    async (path, bytes) => {
      const root = makeTree([{ path, content: '' }]);
      roots.push(root);
      await expect(
        computePackDigest(root, { limits: { maxPathBytes: bytes - 1 } }),
      ).rejects.toMatchObject({ code: 'ERR_DIGEST_PATH_TOO_LONG', path });
      const { entries } = await computePackDigest(root, { limits: { maxPathBytes: bytes } });
      expect(entries.map((e) => e.path)).toEqual([path]);
    },
  );
});
