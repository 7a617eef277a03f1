import { spawn } from 'node:child_process';
import { createServer, createConnection, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FrameDecoder, FrameWriter, encodeFrame, type DecodeError } from '../src/index.js';
import { packageDir, tempDir } from './helpers.js';

function decoder(maxFrameBytes?: number) {
  const frames: Record<string, unknown>[] = [];
  const errors: DecodeError[] = [];
  const d = new FrameDecoder({
    onFrame: (f) => frames.push(f),
    onError: (e) => errors.push(e),
    ...(maxFrameBytes !== undefined ? { maxFrameBytes } : {}),
  });
  return { d, frames, errors };
}

describe('encodeFrame', () => {
  it('escapes U+2028, U+2029 and U+0085 and still round-trips', () => {
    const frame = { type: 'text', delta: 'a\u2028b\u2029c\u0085d' };
    const line = encodeFrame(frame);
    expect(line).toBe('{"type":"text","delta":"a\\u2028b\\u2029c\\u0085d"}\n');
    expect(JSON.parse(line)).toEqual(frame);
  });

  it('throws ERR_FRAME_TOO_LARGE over the cap', () => {
    expect(() => encodeFrame({ type: 'x', pad: 'p'.repeat(100) }, 64)).toThrow(
      expect.objectContaining({ code: 'ERR_FRAME_TOO_LARGE' }),
    );
  });
});

describe('FrameDecoder', () => {
  const input = Buffer.from(
    '{"type":"a","s":"é✓😀"}\n\r\n{"type":"b"}\r\n\n{"type":"c","n":[1,2]}\n',
  );

  it('yields the same frames whatever the split, including every single byte', () => {
    const whole = decoder();
    whole.d.push(input);
    expect(whole.frames).toEqual([
      { type: 'a', s: 'é✓😀' },
      { type: 'b' },
      { type: 'c', n: [1, 2] },
    ]);
    for (let cut = 1; cut < input.length; cut += 1) {
      const split = decoder();
      split.d.push(input.subarray(0, cut));
      split.d.push(input.subarray(cut));
      expect(split.frames).toEqual(whole.frames);
    }
    const bytes = decoder();
    for (let i = 0; i < input.length; i += 1) bytes.d.push(input.subarray(i, i + 1));
    expect(bytes.frames).toEqual(whole.frames);
    expect(bytes.errors).toEqual([]);
  });

  it('reports and skips non-JSON and non-object lines, and keeps going', () => {
    const { d, frames, errors } = decoder();
    d.push('nope\n[1]\n"s"\nnull\n{"type":"ok"}\n');
    expect(frames).toEqual([{ type: 'ok' }]);
    expect(errors.map((e) => e.code)).toEqual([
      'invalid_json',
      'invalid_frame',
      'invalid_frame',
      'invalid_frame',
    ]);
  });

  it('skips an oversize line whether it arrives whole or in pieces', () => {
    const { d, frames, errors } = decoder(32);
    d.push(`{"type":"big","pad":"${'x'.repeat(40)}"}\n{"type":"after"}\n`);
    d.push('{"type":"split","pad":"');
    d.push('y'.repeat(50));
    d.push('"}\n{"type":"again"}\n');
    expect(frames).toEqual([{ type: 'after' }, { type: 'again' }]);
    expect(errors.map((e) => e.code)).toEqual(['frame_too_large', 'frame_too_large']);
    expect(errors[1]?.bytes).toBe(75);
  });

  it('accepts a frame of exactly the cap', () => {
    const line = `{"type":"e","p":"${'q'.repeat(64 - 19)}"}`;
    expect(Buffer.byteLength(line)).toBe(64);
    const { d, frames, errors } = decoder(64);
    d.push(`${line}\n`);
    expect(errors).toEqual([]);
    expect(frames).toHaveLength(1);
  });

  it('reports an unterminated tail at end of input', () => {
    const { d, frames, errors } = decoder();
    d.push('{"type":"done"}\n{"type":"cut');
    d.end();
    expect(frames).toEqual([{ type: 'done' }]);
    expect(errors).toEqual([expect.objectContaining({ code: 'unterminated_frame', bytes: 12 })]);
  });

  it('buffers without quadratic copying: 1 MiB in one-byte chunks, and 10 MiB in mixed chunks', () => {
    // A decoder that re-concatenated its pending bytes per chunk would copy ~5e11 bytes here.
    const line = Buffer.from(`${JSON.stringify({ type: 'big', pad: 'b'.repeat(1024 * 1024) })}\n`);
    const { d, frames } = decoder();
    for (let i = 0; i < line.length; i += 1) d.push(line.subarray(i, i + 1));
    expect(frames).toHaveLength(1);
    const huge = Buffer.from(
      `${JSON.stringify({ type: 'huge', pad: 'h'.repeat(10 * 1024 * 1024) })}\n`,
    );
    const mixed = decoder();
    const sizes = [1, 3, 17, 512, 4096, 65536];
    for (let offset = 0, i = 0; offset < huge.length; i += 1) {
      const size = sizes[i % sizes.length] as number;
      mixed.d.push(huge.subarray(offset, offset + size));
      offset += size;
    }
    expect((mixed.frames[0]?.pad as string).length).toBe(10 * 1024 * 1024);
  });
});

describe('FrameWriter over a unix socket', () => {
  async function socketPair(): Promise<{ a: Socket; b: Socket; close: () => Promise<void> }> {
    const dir = await tempDir();
    const path = join(dir.path, 'w.sock');
    const accepted = new Promise<Socket>((resolve) => {
      const server = createServer((socket) => {
        server.close();
        resolve(socket);
      }).listen(path);
    });
    const b = createConnection(path);
    const a = await accepted;
    return {
      a,
      b,
      close: async () => {
        a.destroy();
        b.destroy();
        await dir.cleanup();
      },
    };
  }

  it('waits for drain while the reader is paused, coalescing deltas with contiguous seq', async () => {
    const { a, b, close } = await socketPair();
    b.pause();
    const writer = new FrameWriter(a, { highWaterBytes: 64 * 1024 });
    let seq = 0;
    let frames = 0;
    const delta = 'd'.repeat(1000);
    for (let i = 0; i < 5000; i += 1) {
      if (
        writer.writeDelta('text', 'r', delta, () => ({
          type: 'text',
          runId: 'r',
          seq: (seq += 1),
          delta: '',
        }))
      ) {
        frames += 1;
      }
    }
    // The reader is paused: the writer holds at least its high-water mark, so it must wait.
    expect(writer.bufferedBytes).toBeGreaterThanOrEqual(64 * 1024);
    let writable = false;
    const whenWritable = writer.whenWritable().then(() => (writable = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(writable).toBe(false);
    // Merged: far fewer frames than deltas.
    expect(frames).toBeLessThan(1000);
    const received: { seq: number; delta: string }[] = [];
    let receivedBytes = 0;
    let allReceived!: () => void;
    const everything = new Promise<void>((resolve) => (allReceived = resolve));
    const d = new FrameDecoder({
      onFrame: (f) => {
        received.push(f as never);
        receivedBytes += (f as { delta: string }).delta.length;
        if (receivedBytes >= 5_000_000) allReceived();
      },
      onError: () => {},
    });
    b.on('data', (chunk: Buffer) => d.push(chunk));
    b.resume();
    await writer.flush();
    await whenWritable;
    await everything;
    expect(writable).toBe(true);
    expect(received.map((f) => f.seq)).toEqual(received.map((_, i) => i + 1));
    expect(received.reduce((n, f) => n + f.delta.length, 0)).toBe(5_000_000);
    await close();
  });
});

describe('flush before exit', () => {
  it('a child that writes a 5 MiB frame, flushes and exits at once delivers it whole', async () => {
    const code = `
      import { FrameWriter } from './dist/index.js';
      const writer = new FrameWriter(process.stdout);
      writer.write({ type: 'big', pad: 'f'.repeat(5 * 1024 * 1024) });
      await writer.flush();
      process.exit(0);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { cwd: packageDir });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    await new Promise((resolve) => child.on('close', resolve));
    const text = Buffer.concat(chunks).toString();
    expect(text.endsWith('\n')).toBe(true);
    expect((JSON.parse(text) as { pad: string }).pad.length).toBe(5 * 1024 * 1024);
  });
});
