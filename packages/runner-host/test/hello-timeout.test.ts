import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  serveRunnerSocket,
  startRunnerHost,
  type HostTimers,
  type RunnerEngine,
  type RunnerHostLogEntry,
  type RunnerSocketServer,
  type RunnerSocketServerOptions,
} from '../src/index.js';
import { RawPeer } from '../src/conformance/index.js';
import { ManualTimers, deferred, tempDir } from './helpers.js';
import { InProcessHost } from './in-process.js';

const WAIT = 5000;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Timers that fire only when told to (`ManualTimers`), and remember the delay each was set for. */
class RecordingTimers implements HostTimers {
  readonly delays: number[] = [];
  readonly #manual = new ManualTimers();
  setTimeout(callback: () => void, ms: number): unknown {
    this.delays.push(ms);
    return this.#manual.setTimeout(callback);
  }
  clearTimeout(handle: unknown): void {
    this.#manual.clearTimeout(handle);
  }
  fireAll(): void {
    this.#manual.fireAll();
  }
}

/** An engine whose runs wait for `gate` (a turn far longer than the handshake deadline). */
function gated(gate: Promise<void>): RunnerEngine<unknown> {
  return {
    id: 'e',
    displayName: 'E',
    async stream(message, _options, emitter) {
      await gate;
      await emitter.text(`done: ${message}`);
    },
  };
}

async function serve(
  extra: Partial<RunnerSocketServerOptions<unknown>> &
    Pick<RunnerSocketServerOptions<unknown>, 'session'>,
): Promise<RunnerSocketServer> {
  const dir = await tempDir();
  cleanups.push(dir.cleanup);
  const server = await serveRunnerSocket(join(dir.path, 'h.sock'), extra);
  cleanups.push(() => server.close());
  return server;
}

async function peer(path: string): Promise<RawPeer> {
  const p = await RawPeer.open({ socket: path });
  cleanups.push(() => p.close());
  return p;
}

/** Polls a condition the code under test has no event for (bounded, never a fixed sleep). */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + WAIT;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('helloTimeoutMs on one host (injected timers)', () => {
  it('a driver that sends nothing whole (a ping, then half a line) gets fatal{hello_timeout} at the deadline, and the session ends', async () => {
    const timers = new RecordingTimers();
    const entries: RunnerHostLogEntry[] = [];
    const host = new InProcessHost(gated(Promise.resolve()), {
      helloTimeoutMs: 5000,
      timers,
      logger: (entry) => void entries.push(entry),
    });
    host.send({ type: 'ping', id: 'early' });
    await host.waitFor((f) => f.type === 'pong');
    host.sendRaw('{"type":"hello","protocols":[');
    // One deadline, set when the session started; nothing the driver sent moved it.
    expect(timers.delays).toEqual([5000]);
    timers.fireAll();
    expect(await host.done).toEqual({ reason: 'fatal' });
    expect(host.frames).toEqual([
      { type: 'pong', id: 'early' },
      { type: 'fatal', code: 'hello_timeout', message: expect.stringContaining('5000 ms') },
    ]);
    expect(host.output.writableEnded).toBe(true);
    // The embedder hears of it too; the driver only through the fatal.
    expect(entries).toEqual([
      { level: 'warn', code: 'hello_timeout', message: expect.stringContaining('"hello"') },
    ]);
  });

  it('a hello in time ends the deadline: timers firing later, mid-run, change nothing', async () => {
    const timers = new ManualTimers();
    const gate = deferred();
    const host = new InProcessHost(gated(gate.promise), { helloTimeoutMs: 5000, timers });
    await host.hello();
    // Nothing of the deadline is left to keep the session (or a process) waiting.
    expect(timers.pending).toBe(0);
    host.send({ type: 'run', runId: 'long', message: 'go' });
    await host.waitFor((f) => f.type === 'accepted');
    timers.fireAll();
    host.send({ type: 'ping', id: 'after' });
    await host.waitFor((f) => f.type === 'pong' && f.id === 'after');
    gate.resolve();
    expect(await host.terminal('long')).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(host.frames.filter((f) => f.type === 'fatal')).toEqual([]);
    expect(await host.close()).toEqual({ reason: 'eof' });
  });

  it('a hello without a common version is answered by its own fatal, never a hello_timeout after it', async () => {
    const timers = new ManualTimers();
    const host = new InProcessHost(gated(Promise.resolve()), { helloTimeoutMs: 5000, timers });
    host.send({ type: 'hello', protocols: [999] });
    expect(await host.done).toEqual({ reason: 'fatal' });
    timers.fireAll();
    expect(host.frames.map((f) => f.code)).toEqual(['unsupported_protocol']);
  });

  it('a session that ends before its hello leaves no timer behind (a stdio host process can exit)', async () => {
    const timers = new ManualTimers();
    const host = new InProcessHost(gated(Promise.resolve()), { helloTimeoutMs: 5000, timers });
    expect(await host.close()).toEqual({ reason: 'eof' });
    expect(timers.pending).toBe(0);
    expect(host.frames).toEqual([{ type: 'bye' }]);
  });

  it('without helloTimeoutMs (a stdio host) there is no deadline: a late hello is welcomed', async () => {
    const timers = new RecordingTimers();
    const host = new InProcessHost(gated(Promise.resolve()), { timers });
    host.sendRaw('{"type":"hello",');
    timers.fireAll();
    expect(timers.delays).toEqual([]);
    host.sendRaw('"protocols":[1]}\n');
    await host.waitFor((f) => f.type === 'welcome');
    expect(await host.close()).toEqual({ reason: 'eof' });
    expect(host.frames.map((f) => f.type)).toEqual(['welcome', 'bye']);
  });

  it.each([0, -1, 0.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31])(
    'refuses helloTimeoutMs %s (ERR_INVALID_OPTIONS), on a host and on a socket server',
    async (helloTimeoutMs) => {
      const engine = gated(Promise.resolve());
      expect(() =>
        startRunnerHost({
          engine,
          runtime: {},
          input: process.stdin,
          output: process.stdout,
          helloTimeoutMs,
        }),
      ).toThrow(expect.objectContaining({ code: 'ERR_INVALID_OPTIONS' }));
      const dir = await tempDir();
      cleanups.push(dir.cleanup);
      await expect(
        serveRunnerSocket(join(dir.path, 'h.sock'), {
          session: () => ({ engine, runtime: {} }),
          helloTimeoutMs,
        }),
      ).rejects.toMatchObject({ code: 'ERR_INVALID_OPTIONS' });
    },
  );
});

describe('serveRunnerSocket: the handshake deadline', () => {
  it('applies 10 s by default: a silent connection is told hello_timeout and closed, its slot freed', async () => {
    const timers = new RecordingTimers();
    const server = await serve({
      session: () => ({ engine: gated(Promise.resolve()), runtime: {}, timers }),
    });
    const silent = await peer(server.path);
    await until(() => server.connections === 1, 'the connection to be served');
    expect(timers.delays).toEqual([10_000]);
    timers.fireAll();
    const fatal = await silent.waitFor((f) => f.type === 'fatal', WAIT, 'fatal');
    expect(fatal.code).toBe('hello_timeout');
    expect(await silent.waitClosed(WAIT)).toBe(true);
    await until(() => server.connections === 0, 'the slot to be freed');
  });

  it('frees the slots of silent connections in real time: the driver refused before is served; one that said hello runs on, far past the deadline', async () => {
    const gate = deferred();
    const server = await serve({
      session: () => ({ engine: gated(gate.promise), runtime: {} }),
      helloTimeoutMs: 300,
    });
    const path = server.path;
    // A driver in a turn that lasts longer than every deadline below.
    const talker = await peer(path);
    await talker.hello();
    await talker.waitFor((f) => f.type === 'welcome', WAIT, 'welcome');
    await talker.send({ type: 'run', runId: 'long', message: 'go' });
    await talker.waitFor((f) => f.type === 'accepted', WAIT, 'accepted');
    // Seven connections that never complete a line hold the other slots of the default 8.
    const silent: RawPeer[] = [];
    for (let i = 0; i < 6; i += 1) silent.push(await peer(path));
    const midLine = await peer(path);
    await midLine.write('{"type":"hello","protocols":[');
    silent.push(midLine);
    await until(() => server.connections === 8, 'eight connections to be served');
    const refused = await peer(path);
    await refused.hello();
    expect(await refused.waitFor((f) => f.type === 'fatal', WAIT, 'refusal')).toMatchObject({
      code: 'too_many_connections',
    });

    for (const p of silent) {
      const fatal = await p.waitFor((f) => f.type === 'fatal', WAIT, 'hello_timeout');
      expect(fatal.code).toBe('hello_timeout');
      expect(await p.waitClosed(WAIT)).toBe(true);
      expect(p.frames.map((f) => f.type)).toEqual(['fatal']);
    }
    await until(() => server.connections === 1, 'the silent connections to be let go');
    expect(server.inputBudget.used).toBe(0);
    const retry = await peer(path);
    await retry.hello();
    await retry.waitFor((f) => f.type === 'welcome', WAIT, 'welcome on retry');

    // The talker connected before every silent connection: had its deadline outlived its
    // `welcome`, its fatal would be queued before this pong.
    await talker.send({ type: 'ping', id: 'still-here' });
    await talker.waitFor((f) => f.type === 'pong' && f.id === 'still-here', WAIT, 'pong');
    gate.resolve();
    expect(
      await talker.waitFor((f) => f.type === 'result', WAIT, 'result of the long run'),
    ).toMatchObject({ runId: 'long', stopReason: 'end_turn' });
    expect(talker.frames.filter((f) => f.type === 'fatal')).toEqual([]);
    expect(talker.closed).toBe(false);
  });
});
