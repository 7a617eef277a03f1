import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { HostTransport, type HostTransportOptions } from '../src/host-transport.js';
import { FrameDecoder, SecretSet, type RunnerHostLogEntry } from '../src/index.js';
import { ManualTimers } from './helpers.js';

/** A transport on two PassThroughs; the driver side reads nothing until `read()` is called. */
function setup(options: Partial<HostTransportOptions> = {}) {
  const input = new PassThrough();
  // A small stream buffer, so that what the driver leaves unread backs up in the transport.
  const output = new PassThrough({ highWaterMark: 1024 });
  const entries: RunnerHostLogEntry[] = [];
  const secrets = new SecretSet();
  const timers = new ManualTimers();
  let outputClosed = 0;
  const transport = new HostTransport(input, output, {
    maxFrameBytes: 64 * 1024,
    highWaterBytes: 4096,
    maxBufferedOutputBytes: 16 * 1024,
    secrets,
    logger: (entry) => void entries.push(entry),
    timers,
    flushTimeoutMs: 1000,
    onOutputClosed: () => (outputClosed += 1),
    ...options,
  });
  /** Reads everything the transport has written so far, as frames. */
  const read = () => {
    const frames: Record<string, unknown>[] = [];
    const decoder = new FrameDecoder({ onFrame: (f) => frames.push(f), onError: () => {} });
    for (let chunk = output.read() as Buffer | null; chunk !== null; chunk = output.read()) {
      decoder.push(chunk);
    }
    return frames;
  };
  return { input, output, transport, entries, secrets, timers, read, closed: () => outputClosed };
}

/** Lets the writer's queued pump (a microtask) and stream callbacks run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('HostTransport', () => {
  it('holds emitters back while the driver leaves more than highWaterBytes unread', async () => {
    const { transport, read } = setup();
    for (let i = 0; i < 8; i += 1) transport.send({ type: 'progress', i, pad: 'p'.repeat(1000) });
    await settle();
    expect(transport.bufferedBytes).toBeGreaterThan(4096);
    let writable = false;
    const waiting = transport.whenWritable().then(() => (writable = true));
    await settle();
    expect(writable).toBe(false);
    const frames: Record<string, unknown>[] = [];
    while (!writable) {
      frames.push(...read());
      await settle();
    }
    await waiting;
    frames.push(...read());
    expect(frames.map((f) => f.i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('drops log frames (never others) while backed up; the logger still gets every entry', async () => {
    const { transport, entries, read } = setup();
    transport.log('info', 'before');
    for (let i = 0; i < 8; i += 1) transport.send({ type: 'progress', i, pad: 'p'.repeat(1000) });
    await settle();
    transport.log('warn', 'while backed up', 'some_code', 'r1');
    transport.send({ type: 'progress', i: 8 });
    const frames: Record<string, unknown>[] = [];
    for (let i = 0; i < 50 && frames.length < 10; i += 1) {
      frames.push(...read());
      await settle();
    }
    expect(frames.filter((f) => f.type === 'log').map((f) => f.message)).toEqual(['before']);
    expect(frames.filter((f) => f.type === 'progress')).toHaveLength(9);
    expect(entries).toEqual([
      { level: 'info', message: 'before' },
      { level: 'warn', message: 'while backed up', code: 'some_code', runId: 'r1' },
    ]);
  });

  it('stops reading a driver past maxBufferedOutputBytes and resumes once it reads', async () => {
    const { input, transport, read } = setup();
    const received: unknown[] = [];
    transport.read({ onFrame: (f) => received.push(f), onEnd: () => {} });
    input.write('{"type":"ping"}\n');
    await settle();
    expect(received).toEqual([{ type: 'ping' }]);
    transport.throttleInput();
    expect(input.isPaused()).toBe(false);
    for (let i = 0; i < 20; i += 1) transport.send({ type: 'progress', pad: 'p'.repeat(1000) });
    await settle();
    transport.throttleInput();
    expect(input.isPaused()).toBe(true);
    while (input.isPaused()) {
      read();
      await settle();
    }
    expect(transport.bufferedBytes).toBeLessThan(4096);
  });

  it('never resumes input it was told to stop reading', async () => {
    const { input, transport, read } = setup();
    transport.read({ onFrame: () => {}, onEnd: () => {} });
    for (let i = 0; i < 20; i += 1) transport.send({ type: 'progress', pad: 'p'.repeat(1000) });
    await settle();
    transport.throttleInput();
    transport.stopReading();
    let writable = false;
    const waiting = transport.whenWritable().then(() => (writable = true));
    while (!writable) {
      read();
      await settle();
    }
    await waiting;
    await settle();
    expect(input.isPaused()).toBe(true);
  });

  it('merges unsent deltas of a run into one frame, spending a seq only for a new frame', async () => {
    const { transport, read } = setup();
    const run = { runId: 'r1', seq: 0 };
    transport.sendDelta(run, 'text', 'a');
    transport.sendDelta(run, 'text', 'b');
    transport.sendRunEvent(run, { type: 'progress', message: 'between' });
    transport.sendDelta(run, 'text', 'c');
    transport.sendDelta(run, 'thinking', 'd');
    transport.sendDelta(run, 'thinking', 'e');
    await settle();
    expect(read()).toEqual([
      { type: 'text', runId: 'r1', seq: 1, delta: 'ab' },
      { type: 'progress', message: 'between', runId: 'r1', seq: 2 },
      { type: 'text', runId: 'r1', seq: 3, delta: 'c' },
      { type: 'thinking', runId: 'r1', seq: 4, delta: 'de' },
    ]);
    expect(run.seq).toBe(4);
  });

  it('sends every delta as its own frame with coalesceDeltas: false', async () => {
    const { transport, read } = setup({ coalesceDeltas: false });
    const run = { runId: 'r1', seq: 0 };
    for (const delta of ['a', 'b', 'c']) transport.sendDelta(run, 'text', delta);
    await settle();
    expect(read().map((f) => [f.seq, f.delta])).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
    ]);
  });

  it('scrubs known secrets from frames and log entries', async () => {
    const { transport, secrets, entries, read } = setup();
    secrets.add('sk-transport-secret');
    transport.send({ type: 'progress', message: 'key sk-transport-secret' });
    transport.log('error', 'leaked sk-transport-secret');
    await settle();
    expect(JSON.stringify(read())).not.toContain('sk-transport-secret');
    expect(entries[0]?.message).toBe('leaked [redacted]');
  });

  it('drops a frame over the cap and reports it as invalid_frame', async () => {
    const { transport, entries, read } = setup({ maxFrameBytes: 256 });
    transport.send({ type: 'progress', message: 'x'.repeat(300) });
    transport.send({ type: 'progress', message: 'fits' });
    await settle();
    expect(entries.map((e) => e.code)).toEqual(['invalid_frame']);
    expect(read().map((f) => f.type === 'log' || f.message)).toEqual([true, 'fits']);
  });

  it('close() gives up after flushTimeoutMs on a driver that never reads, destroying the output', async () => {
    const { output, transport, timers } = setup();
    for (let i = 0; i < 8; i += 1) transport.send({ type: 'progress', pad: 'p'.repeat(1000) });
    await settle();
    const closing = transport.close(true);
    await settle();
    expect(output.destroyed).toBe(false);
    timers.fireAll();
    await closing;
    expect(output.destroyed).toBe(true);
  });

  it('close(false) flushes a reading driver and leaves the output open', async () => {
    const { output, transport, timers, read } = setup();
    transport.send({ type: 'bye' });
    const closing = transport.close(false);
    await closing;
    expect(read()).toEqual([{ type: 'bye' }]);
    expect(output.destroyed || output.writableEnded).toBe(false);
    expect(timers.pending).toBe(0);
  });

  it('reports a closed output once; later frames are dropped and nothing waits for them', async () => {
    const { output, transport, closed } = setup();
    output.destroy();
    await settle();
    transport.send({ type: 'bye' });
    output.emit('close');
    await expect(transport.whenWritable()).resolves.toBeUndefined();
    expect(transport.bufferedBytes).toBe(0);
    expect(closed()).toBe(1);
  });
});
