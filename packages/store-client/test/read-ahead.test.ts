import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { extractArchive } from '../src/index.js';
import { GZIP_SLICE_BYTES, inflateGzip } from '../src/gunzip.js';
import { makeTgz, tempDir } from './helpers.js';

const CHUNK = 16 * 1024;

/** `bytes` in 16 KiB chunks, counting how many the reader has taken. */
function countedSource(bytes: Buffer): { source: AsyncIterable<Buffer>; taken(): number } {
  let taken = 0;
  const source = (async function* () {
    for (let at = 0; at < bytes.length; at += CHUNK) {
      taken += 1;
      yield bytes.subarray(at, at + CHUNK);
    }
  })();
  return { source, taken: () => taken };
}

const slicesRead = (chunks: number): number => (chunks * CHUNK) / GZIP_SLICE_BYTES;

describe('inflateGzip reads ahead of its caller, within bounds (issue 14, bench/install)', () => {
  it('inflates the next two slices while the caller works on one, and no more', async () => {
    // Random bytes do not compress: about 16 slices of input.
    const plain = randomBytes(1024 * 1024);
    const { source, taken } = countedSource(gzipSync(plain));
    const slices = inflateGzip(source);
    const out: Buffer[] = [];
    const first = await slices.next();
    expect(first.done).toBe(false);
    if (first.done === true) return;
    out.push(...first.value.pieces);
    // The caller is busy: the next two slices are read meanwhile, and nothing past them.
    await sleep(100);
    expect(slicesRead(taken())).toBe(3);
    await sleep(50);
    expect(slicesRead(taken())).toBe(3);
    for await (const slice of slices) out.push(...slice.pieces);
    expect(Buffer.concat(out).equals(plain)).toBe(true);
  });

  it('reads nothing ahead while the caller holds more than 4 MiB of output', async () => {
    // The first slice inflates to ~6 MiB (zeros), the rest do not compress.
    const compressed = Buffer.concat([
      gzipSync(Buffer.alloc(6 * 1024 * 1024)),
      gzipSync(randomBytes(256 * 1024)),
    ]);
    const { source, taken } = countedSource(compressed);
    const slices = inflateGzip(source);
    const first = await slices.next();
    if (first.done === true) throw new Error('no first slice');
    expect(first.value.bytes).toBeGreaterThan(4 * 1024 * 1024);
    await sleep(100);
    expect(slicesRead(taken())).toBe(1);
    // Once the caller moves on to a small slice, reading ahead resumes.
    const second = await slices.next();
    if (second.done === true) throw new Error('no second slice');
    expect(second.value.bytes).toBeLessThan(4 * 1024 * 1024);
    await sleep(100);
    expect(slicesRead(taken())).toBe(4);
    await slices.return(undefined);
  });

  it('a slow caller sees the same bytes and the same refusal as a fast one', async () => {
    const plain = randomBytes(300 * 1024);
    const archive = Buffer.concat([gzipSync(plain), Buffer.from('trailing garbage')]);
    const consume = async (pauseMs: number) => {
      const out: Buffer[] = [];
      try {
        for await (const slice of inflateGzip(countedSource(archive).source)) {
          out.push(...slice.pieces);
          // A slow caller: the slices ahead, and the refusal, are ready long before it asks.
          if (pauseMs > 0) await sleep(pauseMs);
        }
        return { out: Buffer.concat(out), code: 'ok' };
      } catch (error) {
        return { out: Buffer.concat(out), code: (error as { code?: string }).code };
      }
    };
    const fast = await consume(0);
    const slow = await consume(20);
    expect(slow.code).toBe('ERR_ARCHIVE_TRAILING_DATA');
    expect(fast.code).toBe(slow.code);
    expect(slow.out.equals(fast.out)).toBe(true);
    // Every slice before the one that holds the end of the stream came through whole.
    expect(slow.out.length).toBeGreaterThan(plain.length - 2 * GZIP_SLICE_BYTES);
    expect(plain.subarray(0, slow.out.length).equals(slow.out)).toBe(true);
  });
});

describe('extraction writes small files synchronously but keeps the event loop turning', () => {
  it('no turn of the event loop waits more than 100 ms while 3,000 files are written', async () => {
    const entries = Array.from({ length: 3000 }, (_, i) => ({
      name: `d${i % 30}/f${i}.md`,
      content: randomBytes(2048).toString('base64'),
    }));
    const archive = await makeTgz(entries);
    const dest = `${await tempDir()}/out`;
    let last = performance.now();
    let longest = 0;
    let ticking = true;
    const tick = () => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const result = await extractArchive(archive, dest);
    ticking = false;
    expect(result.files).toBe(3000);
    // Writing them takes several hundred ms on the CI machine; one piece of it at a time.
    expect(longest).toBeLessThan(100);
  });
});
