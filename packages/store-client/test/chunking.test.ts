import { createHash } from 'node:crypto';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { extractArchive, installPack, isStoreError, openStore } from '../src/index.js';
import { makeTar, manifest, tempDir } from './helpers.js';

/** A real archive with many folders, so a cut often falls while folders are being created. */
async function manyFolders(count = 40): Promise<Buffer> {
  const entries = [{ name: 'agent.yaml', content: manifest('deep', '1.0.0') }];
  for (let i = 0; i < count; i++) {
    entries.push({ name: `d${i}/a/b/f.txt`, content: 'x'.repeat((i * 37) % 900) });
  }
  return gzipSync(await makeTar(entries));
}

/** The verdict of one extraction: `ok`, or the error code; anything untyped fails the test. */
async function verdict(input: Readable | Buffer, dest: string): Promise<string> {
  try {
    await extractArchive(input, dest);
    return 'ok';
  } catch (error) {
    if (!isStoreError(error)) throw new Error(`untyped error: ${String(error)}`, { cause: error });
    return error.code;
  }
}

function chunked(bytes: Buffer, cuts: number[]): Readable {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let at = 0;
  for (const point of [...points, bytes.length]) {
    if (point > at) chunks.push(bytes.subarray(at, point));
    at = Math.max(at, point);
  }
  return Readable.from(chunks);
}

describe('a gzip stream cut while folders are being created (issue 16.2)', () => {
  it('extractArchive: ERR_ARCHIVE_TRUNCATED every time, no staging folder, many times in one process', async () => {
    const archive = await manyFolders();
    const parent = await tempDir();
    for (let i = 0; i < 30; i++) {
      const cut = archive.subarray(0, Math.floor((archive.length * (i + 1)) / 32));
      expect(await verdict(cut, join(parent, `t${i}`))).toBe('ERR_ARCHIVE_TRUNCATED');
    }
    expect(await readdir(parent)).toEqual([]);
  }, 120_000);

  it('installPack: the same typed error, nothing installed, no lock or staging left', async () => {
    const archive = await manyFolders();
    const root = await tempDir();
    const storeDir = join(root, 'store');
    await mkdir(storeDir);
    const versions = [];
    for (let i = 0; i < 12; i++) {
      const cut = archive.subarray(0, Math.floor((archive.length * (i + 1)) / 14));
      await writeFile(join(storeDir, `cut-${i}.tar.gz`), cut);
      versions.push({
        version: `1.0.${i}`,
        archive: `cut-${i}.tar.gz`,
        size: cut.length,
        sha256: createHash('sha256').update(cut).digest('hex'),
        digest: '0'.repeat(64),
      });
    }
    await writeFile(
      join(storeDir, 'index.json'),
      JSON.stringify({
        format: 'packwarden-store/1',
        artifacts: [{ type: 'pack', slug: 'deep', latestVersion: '1.0.0', versions }],
      }),
    );
    const store = await openStore({
      url: pathToFileURL(join(storeDir, 'index.json')).href,
      env: {},
      cacheDir: false,
    });
    const home = join(root, 'home');
    for (const { version } of versions) {
      const error = await installPack(
        store,
        { type: 'pack', slug: 'deep', version },
        { home },
      ).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isStoreError(error), String(error)).toBe(true);
      expect((error as { code: string }).code).toBe('ERR_ARCHIVE_TRUNCATED');
    }
    expect(await readdir(join(home, 'agents', 'deep'))).toEqual([]);
  }, 120_000);
});

describe('same bytes, same verdict, whatever the chunking (issue 16.6)', () => {
  it('bytes after the gzip stream that start with a NUL are ERR_ARCHIVE_TRAILING_DATA in one buffer and in 1-byte chunks', async () => {
    const archive = gzipSync(await makeTar([{ name: 'a.txt', content: 'hello' }]));
    const parent = await tempDir();
    for (const trailer of [
      Buffer.from([0, 1, 2]),
      Buffer.alloc(10),
      Buffer.from([0]),
      Buffer.from('junk'),
    ]) {
      const bytes = Buffer.concat([archive, trailer]);
      const whole = await verdict(bytes, join(parent, 'whole'));
      const split = await verdict(chunked(bytes, [archive.length]), join(parent, 'split'));
      const bytewise = await verdict(
        chunked(
          bytes,
          Array.from({ length: bytes.length }, (_, i) => i),
        ),
        join(parent, 'bytewise'),
      );
      expect([whole, split, bytewise]).toEqual(Array(3).fill('ERR_ARCHIVE_TRAILING_DATA'));
    }
    expect(await readdir(parent)).toEqual([]);
  });

  it('property: random archives, mutations and trailers give one verdict for every chunking, typed errors only, nothing outside dest', async () => {
    const parent = await tempDir();
    const base = [
      gzipSync(await makeTar([{ name: 'agent.yaml', content: manifest('p', '1.0.0') }])),
      await manyFolders(8),
    ];
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...base),
        fc.oneof(
          fc.constant<{ kind: 'none' }>({ kind: 'none' }),
          fc.record({
            kind: fc.constant('trailer' as const),
            bytes: fc.uint8Array({ maxLength: 40 }),
          }),
          fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
          fc.record({
            kind: fc.constant('flip' as const),
            at: fc.nat(),
            value: fc.integer({ min: 0, max: 255 }),
          }),
        ),
        fc.array(fc.nat(), { maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        async (archive, change, cutsA, cutsB) => {
          let bytes = Buffer.from(archive);
          if (change.kind === 'trailer') bytes = Buffer.concat([bytes, Buffer.from(change.bytes)]);
          if (change.kind === 'cut') bytes = bytes.subarray(0, change.at % (bytes.length + 1));
          if (change.kind === 'flip') bytes[change.at % bytes.length] = change.value;
          const round = n++;
          const dir = join(parent, `r${round}`);
          await mkdir(dir);
          const a = await verdict(chunked(bytes, cutsA), join(dir, 'a'));
          const b = await verdict(chunked(bytes, cutsB), join(dir, 'b'));
          const whole = await verdict(bytes, join(dir, 'whole'));
          expect(b).toBe(a);
          expect(whole).toBe(a);
          // Only the three destinations, and no staging folder, ever appear.
          const names = (await readdir(dir)).sort();
          expect(names).toEqual(a === 'ok' ? ['a', 'b', 'whole'] : []);
        },
      ),
      { numRuns: 80, seed: 1616 },
    );
  }, 120_000);
});
