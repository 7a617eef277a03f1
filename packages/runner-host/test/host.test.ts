import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  RunnerHostError,
  connectRunnerSocket,
  startRunnerHost,
  type EngineRunOptions,
  type KillRequest,
  type RunnerEngine,
  type RunnerHostExit,
  type RunnerHostLogEntry,
  type RunnerHostOptions,
} from '../src/index.js';
import { RawPeer } from '../src/conformance/index.js';
import { ManualTimers, deferred, tempDir } from './helpers.js';

interface Harness {
  socketPath: string;
  done: Promise<RunnerHostExit>;
  /** The host's side of the connection. */
  hostSocket: () => Socket | undefined;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** Serves one connection with an in-process host on a real unix socket in a temp dir. */
async function serve(
  options: Omit<RunnerHostOptions<{ tag: string }>, 'input' | 'output' | 'runtime'>,
): Promise<Harness> {
  const dir = await tempDir();
  const socketPath = join(dir.path, 'h.sock');
  let resolveDone!: (exit: Promise<RunnerHostExit>) => void;
  const done = new Promise<Promise<RunnerHostExit>>((resolve) => (resolveDone = resolve)).then(
    (p) => p,
  );
  const sockets: Socket[] = [];
  const server: Server = createServer({ allowHalfOpen: true }, (socket) => {
    sockets.push(socket);
    socket.on('error', () => {});
    resolveDone(
      startRunnerHost({ ...options, runtime: { tag: 'rt' }, input: socket, output: socket }).done,
    );
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  cleanups.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
    await dir.cleanup();
  });
  return { socketPath, done, hostSocket: () => sockets[0] };
}

/** Waits for a condition the code under test has no event for (bounded; never a fixed sleep). */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function engine(
  id: string,
  stream: RunnerEngine<{ tag: string }>['stream'],
  extra: Partial<RunnerEngine<{ tag: string }>> = {},
): RunnerEngine<{ tag: string }> {
  return { id, displayName: id.toUpperCase(), stream, ...extra };
}

describe('startRunnerHost', () => {
  it('rejects options without engines or with duplicate engine ids', () => {
    const base = { runtime: {}, input: process.stdin, output: process.stdout };
    expect(() => startRunnerHost(base)).toThrow(RunnerHostError);
    const e = engine('a', async () => {});
    expect(() => startRunnerHost({ ...base, engines: [e, e] })).toThrow(/unique/);
  });

  it('calls the kill hook after the grace period for an engine that ignores its signal', async () => {
    const kills: KillRequest[] = [];
    let sawAbort = false;
    const stubborn = engine('stubborn', async (_m, _o, emitter, _r, signal) => {
      signal.addEventListener('abort', () => (sawAbort = true));
      await emitter.text('started');
      await new Promise(() => {});
    });
    const harness = await serve({
      engine: stubborn,
      cancelGraceMs: 100,
      kill: (request) => void kills.push(request),
    });
    const { client } = await connectRunnerSocket(harness.socketPath);
    const controller = new AbortController();
    const handle = client.run(
      { runId: 'r1', message: 'go' },
      {
        signal: controller.signal,
        onEvent: (event) => event.type === 'text' && controller.abort(),
      },
    );
    expect(await handle.outcome).toMatchObject({ type: 'result', stopReason: 'cancelled' });
    expect(sawAbort).toBe(true);
    expect(kills).toEqual([{ runId: 'r1', engineId: 'stubborn', reason: 'cancel' }]);
    await client.shutdown();
    expect(await harness.done).toEqual({ reason: 'shutdown' });
  });

  it('does not call the kill hook when the engine honours its signal', async () => {
    const kills: KillRequest[] = [];
    const polite = engine('polite', async (_m, _o, emitter, _r, signal) => {
      await emitter.text('started');
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
    });
    const timers = new ManualTimers();
    const harness = await serve({
      engine: polite,
      cancelGraceMs: 50,
      kill: (request) => void kills.push(request),
      timers,
    });
    const { client } = await connectRunnerSocket(harness.socketPath);
    const controller = new AbortController();
    const handle = client.run(
      { message: 'go' },
      {
        signal: controller.signal,
        onEvent: (event) => event.type === 'text' && controller.abort(),
      },
    );
    expect(await handle.outcome).toMatchObject({ stopReason: 'cancelled' });
    // Let every grace period still pending expire now: none may lead to a kill.
    timers.fireAll();
    expect(kills).toEqual([]);
    await client.shutdown();
  });

  it('gives failed for a synchronous throw and for a rejection, never result', async () => {
    const thrower = engine('thrower', () => {
      throw new Error('sync boom');
    });
    const rejecter = engine('rejecter', async () => {
      throw Object.assign(new Error('quota'), { code: 'quota_exceeded', retryable: true });
    });
    const harness = await serve({ engines: [thrower, rejecter] });
    const { client } = await connectRunnerSocket(harness.socketPath);
    expect(await client.run({ message: 'x' }).outcome).toMatchObject({
      type: 'failed',
      seq: 2,
      error: { code: 'engine_error', message: 'sync boom', retryable: false },
    });
    expect(await client.run({ message: 'x', engineId: 'rejecter' }).outcome).toMatchObject({
      type: 'failed',
      error: { code: 'quota_exceeded', retryable: true },
    });
    await client.shutdown();
  });

  it('passes run options and the runtime to the engine, hiding secrets from enumeration', async () => {
    let seen: EngineRunOptions | undefined;
    let runtimeTag = '';
    const probe = engine('probe', async (message, options, emitter, runtime) => {
      seen = options;
      runtimeTag = runtime.tag;
      await emitter.text(`${message}|${JSON.stringify(options)}|${Object.keys(options).join(',')}`);
    });
    const harness = await serve({ engine: probe, nativeSessionId: 'native-seed' });
    const { client } = await connectRunnerSocket(harness.socketPath);
    const texts: string[] = [];
    const outcome = await client.run(
      {
        runId: 'opt',
        message: 'hi',
        modelId: 'm1',
        permissions: { fileAccess: 'read' },
        baseUrl: 'https://gateway.example',
        modelToken: 'sk-model-token-123456',
        turnEnv: { API_KEY: 'env-secret-abcdef', SHORT: '1' },
        gatewaySessionKey: 'gw-key-987654321',
      },
      { onEvent: (event) => event.type === 'text' && texts.push(event.delta) },
    ).outcome;
    expect(outcome).toMatchObject({ type: 'result', nativeSessionId: 'native-seed' });
    expect(runtimeTag).toBe('rt');
    expect(seen?.modelToken).toBe('sk-model-token-123456');
    expect(seen?.turnEnv).toEqual({ API_KEY: 'env-secret-abcdef', SHORT: '1' });
    expect(seen?.gatewaySessionKey).toBe('gw-key-987654321');
    expect(seen).toMatchObject({
      runId: 'opt',
      engineId: 'probe',
      modelId: 'm1',
      nativeSessionId: 'native-seed',
    });
    const text = texts.join('');
    expect(text).not.toMatch(/sk-model|env-secret|gw-key/);
    expect(text).toContain('"permissions":{"fileAccess":"read-only"}');
    await client.shutdown();
  });

  it('tracks the session id an engine reports across runs', async () => {
    let counter = 0;
    const sessions: (string | undefined)[] = [];
    const resumable = engine('resumable', async (_m, options, emitter) => {
      sessions.push(options.nativeSessionId);
      counter += 1;
      await emitter.session(`native-${counter}`);
    });
    const harness = await serve({ engine: resumable });
    const { client } = await connectRunnerSocket(harness.socketPath);
    expect(await client.run({ message: 'a' }).outcome).toMatchObject({
      nativeSessionId: 'native-1',
    });
    expect(await client.run({ message: 'b' }).outcome).toMatchObject({
      nativeSessionId: 'native-2',
    });
    expect(await client.run({ message: 'c', nativeSessionId: 'explicit' }).outcome).toMatchObject({
      nativeSessionId: 'native-3',
    });
    expect(sessions).toEqual([undefined, 'native-1', 'explicit']);
    await client.shutdown();
  });

  it('scrubs secrets from logger entries, log frames and rejected runs', async () => {
    const entries: RunnerHostLogEntry[] = [];
    const logs: string[] = [];
    const leaky = engine('leaky', async (_m, options, emitter) => {
      emitter.log('error', `token is ${options.modelToken ?? ''}`);
      await emitter.warning('w', `key ${options.gatewaySessionKey ?? ''}`);
    });
    const harness = await serve({ engine: leaky, logger: (entry) => void entries.push(entry) });
    const { client } = await connectRunnerSocket(harness.socketPath, {
      onLog: (frame) => void logs.push(frame.message),
    });
    const outcome = await client.run({
      message: 'x',
      modelToken: 'sk-abcdef-SECRET',
      gatewaySessionKey: 'gw-abcdef-SECRET',
    }).outcome;
    expect(outcome.type).toBe('result');
    expect(entries.map((e) => e.message)).toEqual(['token is [redacted]']);
    expect(logs).toEqual(['token is [redacted]']);
    await client.shutdown();
  });

  it('runs onMaintenance after each run and dispose on shutdown', async () => {
    const calls: string[] = [];
    // Each run's maintenance holds until the test releases it: the next run and the shutdown must
    // wait for it (README "Embedding the host": the next run of the engine waits for it).
    const started = { m1: deferred(), m2: deferred() };
    const release = { m1: deferred(), m2: deferred() };
    const tidy = engine(
      'tidy',
      async (message, _o, emitter) => {
        calls.push(`stream:${message}`);
        await emitter.text('ok');
      },
      {
        onMaintenance: async (event, runtime) => {
          const runId = event.runId as 'm1' | 'm2';
          started[runId].resolve();
          await release[runId].promise;
          calls.push(`maintenance:${event.reason}:${event.runId}:${runtime.tag}`);
        },
        dispose: () => void calls.push('dispose'),
      },
    );
    const harness = await serve({ engine: tidy });
    const { client } = await connectRunnerSocket(harness.socketPath);
    await client.run({ runId: 'm1', message: 'one' }).outcome;
    await started.m1.promise;
    const accepted = deferred();
    const second = client.run(
      { runId: 'm2', message: 'two' },
      { onEvent: (event) => event.type === 'accepted' && accepted.resolve() },
    );
    // The host accepts m2 at once; an engine it did not hold back would have started before the
    // accepted frame crossed the socket.
    await accepted.promise;
    expect(calls).toEqual(['stream:one']);
    release.m1.resolve();
    await second.outcome;
    await started.m2.promise;
    const shutdown = client.shutdown();
    // Once the host has stopped reading it is stopping; with m2's maintenance held it must not
    // have disposed the engine.
    await until(
      () => harness.hostSocket()?.listenerCount('data') === 0,
      'the host to stop reading',
    );
    expect(calls).not.toContain('dispose');
    release.m2.resolve();
    await shutdown;
    expect(await harness.done).toEqual({ reason: 'shutdown' });
    expect(calls).toEqual([
      'stream:one',
      'maintenance:after_run:m1:rt',
      'stream:two',
      'maintenance:after_run:m2:rt',
      'dispose',
    ]);
  });

  it('fails a run whose engine ignores backpressure instead of buffering without bound', async () => {
    const chunk = 'z'.repeat(64 * 1024);
    const firehose = engine('firehose', async (_m, _o, emitter, _r, signal) => {
      for (let i = 0; i < 2000 && !signal.aborted; i += 1) void emitter.text(`${i}${chunk}`);
    });
    const harness = await serve({
      engine: firehose,
      maxBufferedOutputBytes: 4 * 1024 * 1024,
      cancelGraceMs: 50,
    });
    const { client, socket } = await connectRunnerSocket(harness.socketPath);
    socket.pause();
    let received = 0;
    const handle = client.run(
      { message: 'x' },
      { onEvent: (event) => event.type === 'text' && (received += event.delta.length) },
    );
    // Resumed later: the engine's burst must meet a driver that is not reading.
    setTimeout(() => socket.resume(), 200);
    expect(await handle.outcome).toMatchObject({
      type: 'failed',
      error: { code: 'output_overflow' },
    });
    // The engine produced 128 MiB; the host kept (and so delivered) only about its 4 MiB cap.
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(8 * 1024 * 1024);
    await client.shutdown();
  });

  it('scrubs secrets without breaking a frame: numbers and protocol words stay', async () => {
    // turnEnv values count as secrets: a count and a level name are ordinary ones. Scrubbing them
    // anywhere in the line made `"inputTokens":[redacted]0` and `"type":"[redacted]"`.
    const harness = await serve({
      engine: engine('e', async (_m, _o, emitter) => {
        await emitter.warning('level', 'warning: key sk-live-abcdef');
        await emitter.toolEnd({ toolCallId: 't1', name: 'count', output: { tokens: 1000000 } });
        await emitter.text('the result');
      }),
    });
    const peer = await RawPeer.open({ socket: harness.socketPath }, { recordRaw: true });
    await peer.hello();
    await peer.send({
      type: 'run',
      runId: 'r1',
      message: 'go',
      turnEnv: {
        MAX_TOKENS: '100000',
        LOG_LEVEL: 'warning',
        MODE: 'result',
        KEY: 'sk-live-abcdef',
      },
    });
    await peer.waitFor((f) => f.type === 'result' || f.type === 'failed', 5000, 'the outcome');
    expect(peer.decodeErrors).toEqual([]);
    expect(peer.runFrames('r1').map((f) => f.type)).toEqual([
      'accepted',
      'warning',
      'tool_end',
      'text',
      'result',
    ]);
    expect(peer.runFrames('r1')[1]).toMatchObject({
      code: 'level',
      message: '[redacted]: key [redacted]',
    });
    expect(peer.runFrames('r1')[2]).toMatchObject({ output: { tokens: 1000000 } });
    expect(peer.runFrames('r1')[3]).toMatchObject({ delta: 'the [redacted]' });
    expect(peer.raw.toString()).not.toContain('sk-live-abcdef');
    await peer.close();
  });

  it('never echoes a secret from an invalid run frame or a broken line', async () => {
    const entries: RunnerHostLogEntry[] = [];
    const harness = await serve({
      engine: engine('e', async () => {}),
      logger: (entry) => void entries.push(entry),
    });
    const peer = await RawPeer.open({ socket: harness.socketPath }, { recordRaw: true });
    await peer.hello();
    const token = 'sk-invalid-frame-secret';
    await peer.send({
      type: 'run',
      runId: 'bad',
      message: 42,
      modelToken: token,
      turnEnv: { K: `${token}-env` },
    });
    await peer.write(`{"type":"run","runId":"broken","modelToken":"${token}"\n`);
    await peer.send({ type: 'ping', id: 'end' });
    await peer.waitFor((f) => f.type === 'pong', 5000, 'pong');
    expect(peer.frames.find((f) => f.runId === 'bad')).toMatchObject({
      type: 'failed',
      error: { code: 'invalid_frame' },
    });
    expect(peer.frames.some((f) => f.type === 'log' && f.code === 'invalid_json')).toBe(true);
    expect(peer.raw.toString()).not.toContain(token);
    expect(JSON.stringify(entries)).not.toContain(token);
    await peer.close();
  });

  it('never cuts a runId no frame can carry: names it as sent in log{invalid_frame}, keeps the cut id free', async () => {
    // README "Rules in detail", Run ids: a `run` frame's `runId` is 1–256 characters.
    const entries: RunnerHostLogEntry[] = [];
    const harness = await serve({
      engine: engine('e', async (_m, _o, emitter) => emitter.text('ran')),
      logger: (entry) => void entries.push(entry),
    });
    const peer = await RawPeer.open({ socket: harness.socketPath }, { recordRaw: true });
    await peer.hello();
    const longest = 'r'.repeat(256);
    const tooLong = `${longest}+`;
    await peer.send({ type: 'run', runId: tooLong, message: 'x' });
    const log = await peer.waitFor(
      (f) => f.type === 'log' && f.code === 'invalid_frame',
      5000,
      'the log refusing the frame',
    );
    expect(log).toMatchObject({ level: 'warn', runId: tooLong });
    expect(entries).toContainEqual(
      expect.objectContaining({ code: 'invalid_frame', runId: tooLong }),
    );
    // The echoed id is the driver's text: a secret of the frame in it is scrubbed like any other.
    const token = 'sk-in-a-long-run-id';
    await peer.send({ type: 'run', runId: `${tooLong}${token}`, message: 'x', modelToken: token });
    // Nothing answers the id cut to 256 characters, which is still free for a run of its own.
    await peer.send({ type: 'run', runId: longest, message: 'x' });
    await peer.waitFor((f) => f.runId === longest && f.type === 'result', 5000, 'the result');
    expect(peer.runFrames(longest).map((f) => f.type)).toEqual(['accepted', 'text', 'result']);
    expect(peer.frames.filter((f) => f.type === 'failed')).toEqual([]);
    expect(peer.frames.filter((f) => f.type === 'log').map((f) => f.runId)).toEqual([
      tooLong,
      `${tooLong}[redacted]`,
    ]);
    expect(peer.raw.toString()).not.toContain(token);
    expect(JSON.stringify(entries)).not.toContain(token);
    await peer.close();
  });

  it('stops reading a driver that sends without reading, and loses none of its replies', async () => {
    const harness = await serve({
      engine: engine('e', async () => {}),
      outputHighWaterBytes: 16 * 1024,
      maxBufferedOutputBytes: 256 * 1024,
    });
    const peer = await RawPeer.open({ socket: harness.socketPath });
    peer.pause();
    await peer.hello();
    const count = 200_000;
    const pings = Array.from({ length: count }, (_, i) => `{"type":"ping","id":${i}}\n`).join('');
    void peer.write(pings);
    // The host stops reading (pauses its input) long before the ~5 MB of pings are all in.
    await until(() => harness.hostSocket()?.isPaused() === true, 'the host to pause its input');
    expect(harness.hostSocket()?.bytesRead ?? 0).toBeLessThan(Buffer.byteLength(pings) / 2);
    peer.resume();
    await peer.waitFor((f) => f.type === 'pong' && f.id === count - 1, 20_000, 'the last pong');
    expect(peer.frames.filter((f) => f.type === 'pong')).toHaveLength(count);
    await peer.close();
  });

  it('sends one frame per delta with coalesceDeltas: false, even to a slow driver', async () => {
    const chatty = engine('chatty', async (_m, _o, emitter) => {
      for (let i = 0; i < 3000; i += 1) await emitter.text(`${i};`);
    });
    const harness = await serve({
      engine: chatty,
      coalesceDeltas: false,
      outputHighWaterBytes: 4096,
    });
    const { client, socket } = await connectRunnerSocket(harness.socketPath);
    await client.welcome;
    socket.pause();
    const texts: string[] = [];
    const handle = client.run(
      { message: 'x' },
      { onEvent: (e) => e.type === 'text' && texts.push(e.delta) },
    );
    // Resume once the host's output is backed up, so the deltas really meet a slow driver.
    await until(
      () => (harness.hostSocket()?.writableLength ?? 0) > 0,
      "the host's output to back up",
    );
    socket.resume();
    expect(await handle.outcome).toMatchObject({ type: 'result', seq: 3002 });
    expect(texts).toHaveLength(3000);
    expect(texts[2999]).toBe('2999;');
    await client.shutdown();
  });

  it('resolves done after flushTimeoutMs when the driver never reads again', async () => {
    const chunk = 'w'.repeat(64 * 1024);
    const flood = engine('flood', async (_m, _o, emitter, _r, signal) => {
      while (!signal.aborted) await emitter.text(chunk);
    });
    const harness = await serve({ engine: flood, flushTimeoutMs: 200, cancelGraceMs: 100 });
    const peer = await RawPeer.open({ socket: harness.socketPath });
    await peer.hello();
    await peer.send({ type: 'run', runId: 'stuck', message: 'go' });
    await peer.waitFor((f) => f.type === 'text', 5000, 'text');
    peer.pause();
    // The host's output backs up once the driver stopped reading.
    await until(
      () => (harness.hostSocket()?.writableLength ?? 0) > 0,
      "the host's output to back up",
    );
    await peer.send({ type: 'shutdown' });
    expect(await harness.done).toEqual({ reason: 'shutdown' });
    expect(harness.hostSocket()?.destroyed).toBe(true);
    await peer.close();
  });
});
