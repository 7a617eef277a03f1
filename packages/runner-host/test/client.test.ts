import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  RunnerHostError,
  connectRunner,
  connectRunnerSocket,
  encodeFrame,
  spawnRunner,
  type RunEvent,
  type RunnerClient,
} from '../src/index.js';
import { deferred, hostScript, startSocketHost, type SocketHost } from './helpers.js';

const script = (...steps: object[]) => JSON.stringify({ script: steps });

function spawnHost(
  env: NodeJS.ProcessEnv = {},
  maxBufferedEvents?: number,
  maxFrameBytes?: number,
) {
  return spawnRunner(process.execPath, [hostScript, '--stdio'], {
    stderr: 'pipe',
    env: { ...process.env, ...env },
    idleTimeoutMs: 10_000,
    ...(maxBufferedEvents !== undefined ? { maxBufferedEvents } : {}),
    ...(maxFrameBytes !== undefined ? { maxFrameBytes } : {}),
  });
}

describe('connectRunner over a child process', () => {
  it('handshakes, streams typed events in seq order and resolves the outcome', async () => {
    const { client, child } = spawnHost({ RUNNER_HOST_NATIVE_SESSION_ID: 'native-0' });
    const welcome = await client.welcome;
    expect(welcome.protocol).toBe(1);
    expect(welcome.engines.map((e) => e.id)).toEqual(['scripted', 'second']);
    const handle = client.run({
      message: script(
        { op: 'text', text: 'hello ' },
        { op: 'tool', toolCallId: 't', name: 'grep', input: { q: 1 }, output: ['a'] },
        { op: 'text', text: 'world' },
      ),
    });
    const events: RunEvent[] = [];
    for await (const event of handle) events.push(event);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.map((e) => e.type)).toEqual([
      'accepted',
      'text',
      'tool_start',
      'tool_end',
      'text',
      'result',
    ]);
    const outcome = await handle.outcome;
    expect(outcome).toMatchObject({
      type: 'result',
      stopReason: 'end_turn',
      nativeSessionId: 'native-0',
    });
    expect(await client.ping()).toBeGreaterThanOrEqual(0);
    await client.shutdown();
    expect(child.exitCode ?? (await new Promise((r) => child.once('exit', r)))).toBe(0);
  });

  it('answers questions through onQuestion, and aborting the signal cancels the run', async () => {
    const { client } = spawnHost();
    const answered = client.run(
      { message: script({ op: 'question', prompt: 'colour?', options: ['red', 'blue'] }) },
      {
        onQuestion: (question) => {
          expect(question.prompt).toBe('colour?');
          return { selected: ['red'], freeText: 'because' };
        },
      },
    );
    const texts: string[] = [];
    for await (const event of answered) if (event.type === 'text') texts.push(event.delta);
    expect(texts.join('')).toBe(
      'question:{"outcome":"answered","selected":["red"],"freeText":"because"}',
    );

    const controller = new AbortController();
    const cancelled = client.run(
      { message: script({ op: 'text', text: 'x' }, { op: 'wait', ms: 30_000 }) },
      {
        signal: controller.signal,
        onEvent: (event) => {
          if (event.type === 'text') controller.abort();
        },
      },
    );
    expect(await cancelled.outcome).toMatchObject({ type: 'result', stopReason: 'cancelled' });

    const early = new AbortController();
    early.abort();
    expect(await client.run({ message: 'x' }, { signal: early.signal }).outcome).toMatchObject({
      type: 'result',
      stopReason: 'cancelled',
    });
    await client.shutdown();
  });

  it('refuses a second active run with the same runId', async () => {
    const { client } = spawnHost();
    const first = client.run({ runId: 'same', message: 'one' });
    expect(() => client.run({ runId: 'same', message: 'two' })).toThrow(
      expect.objectContaining({ code: 'ERR_DUPLICATE_RUN' }),
    );
    expect(await first.outcome).toMatchObject({ type: 'result' });
    await client.shutdown();
  });

  it('refuses a runId no host can answer by with ERR_INVALID_RUN_ID, sending nothing; 256 characters run', async () => {
    // README "Rules in detail", Run ids: 1–256 characters, the limit the host applies.
    const { client, child } = spawnHost();
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    for (const runId of ['', 'r'.repeat(257), 42 as never]) {
      expect(() => client.run({ runId, message: 'x' })).toThrow(
        expect.objectContaining({ code: 'ERR_INVALID_RUN_ID' }),
      );
    }
    const longest = 'r'.repeat(256);
    expect(await client.run({ runId: longest, message: 'x' }).outcome).toMatchObject({
      type: 'result',
      runId: longest,
      stopReason: 'end_turn',
    });
    await client.shutdown();
    await new Promise((resolve) => child.once('close', resolve));
    // The host logs every frame it refuses (test/hosts/host.mjs): it saw none of the three.
    expect(stderr).toContain('done {"reason":"shutdown"}');
    expect(stderr).not.toContain('invalid_frame');
  });

  it('declines questions when no onQuestion is given', async () => {
    const { client } = spawnHost();
    const handle = client.run({ message: script({ op: 'question', prompt: 'ok?' }) });
    const events: RunEvent[] = [];
    for await (const event of handle) events.push(event);
    expect(events.find((e) => e.type === 'question_resolved')).toMatchObject({
      outcome: 'declined',
    });
    await client.shutdown();
  });

  it('declines a question whose answer cannot be sent (no unhandled rejection)', async () => {
    const { client } = spawnHost();
    const handle = client.run(
      { message: script({ op: 'question', prompt: 'ok?' }) },
      // A JavaScript caller's handler returning something that is not an answer object.
      { onQuestion: () => null as never },
    );
    const events: RunEvent[] = [];
    for await (const event of handle) events.push(event);
    expect(events.find((e) => e.type === 'question_resolved')).toMatchObject({
      outcome: 'declined',
    });
    expect(await handle.outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    await client.shutdown();
  });

  it('yields failed{host_lost} when the host dies mid-run', async () => {
    const { client, child } = spawnHost();
    await client.welcome;
    const handle = client.run(
      { message: script({ op: 'text', text: 'x' }, { op: 'wait', ms: 30_000 }) },
      { onEvent: (event) => event.type === 'text' && child.kill('SIGKILL') },
    );
    const outcome = await handle.outcome;
    expect(outcome).toMatchObject({
      type: 'failed',
      seq: 3,
      error: { code: 'host_lost', retryable: true },
    });
    await expect(client.ping()).rejects.toMatchObject({ code: 'ERR_CHANNEL_CLOSED' });
  });

  it('yields failed{host_lost} when the host goes silent past the idle timeout', async () => {
    // A "host" that reads but never writes a single frame.
    const child = spawn(process.execPath, [
      '-e',
      'process.stdin.resume(); setInterval(() => {}, 1e6)',
    ]);
    const client = connectRunner({ input: child.stdout, output: child.stdin, idleTimeoutMs: 300 });
    const outcome = await client.run({ message: 'hello' }).outcome;
    expect(outcome).toMatchObject({ type: 'failed', error: { code: 'host_lost' } });
    expect((outcome.type === 'failed' && outcome.error.message) || '').toMatch(
      /no frame from the host/,
    );
    await expect(client.welcome).rejects.toMatchObject({ code: 'ERR_HANDSHAKE' });
    child.kill('SIGKILL');
  });

  it('rejects welcome with ERR_HANDSHAKE when no protocol version is shared', async () => {
    const { client } = spawnRunner(process.execPath, [hostScript, '--stdio'], {
      protocols: [7],
      stderr: 'ignore',
    });
    const error = await client.welcome.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunnerHostError);
    expect(error).toMatchObject({
      code: 'ERR_HANDSHAKE',
      message: expect.stringMatching(/unsupported_protocol/),
    });
    expect(await client.run({ message: 'x' }).outcome).toMatchObject({
      error: { code: 'host_lost' },
    });
  });

  it('pauses reading while unconsumed events pile up, resumes and delivers all of them', async () => {
    const { client, child } = spawnHost({}, 50);
    const handle = client.run({
      message: script({ op: 'text', text: 'y'.repeat(100), repeat: 2000 }),
    });
    // Nobody consumes the events yet: the client must stop reading the host's output.
    const deadline = Date.now() + 10_000;
    while (!child.stdout.isPaused()) {
      if (Date.now() > deadline) throw new Error('the client never paused its input');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    let text = 0;
    for await (const event of handle) if (event.type === 'text') text += event.delta.length;
    expect(text).toBe(200_000);
    await client.shutdown();
  });
});

describe('connectRunner: frames the client cannot send (README "Frames the client cannot send")', () => {
  // Small enough for a long message to overflow, large enough for the handshake and the host's
  // run frames of these tests.
  const maxFrameBytes = 4096;
  const spawnCapped = () => spawnHost({}, undefined, maxFrameBytes);

  /** The `failed` the client makes for a run whose `frame` could not be sent. */
  const notSent = (code: 'frame_too_large' | 'invalid_frame', frame: 'run' | 'cancel') => ({
    type: 'failed',
    seq: 1,
    error: { code, message: expect.stringMatching(`^${frame} frame not sent: `), retryable: false },
  });

  /** The client still runs a turn after the failure, then shuts down. */
  async function expectUsable(client: RunnerClient): Promise<void> {
    expect(await client.run({ message: 'next' }).outcome).toMatchObject({
      type: 'result',
      stopReason: 'end_turn',
    });
    await client.shutdown();
  }

  it('ends a run whose run frame is over maxFrameBytes with failed{frame_too_large}, and runs the next', async () => {
    const { client } = spawnCapped();
    const handle = client.run({ message: 'x'.repeat(maxFrameBytes * 2) });
    const events: RunEvent[] = [];
    for await (const event of handle) events.push(event);
    const failed = { ...notSent('frame_too_large', 'run'), runId: handle.runId };
    expect(events).toEqual([failed]);
    const outcome = await handle.outcome;
    expect(outcome).toEqual(failed);
    expect(outcome.type === 'failed' && outcome.error.message).toMatch(/over the 4096-byte cap/);
    // Nothing reached the host, and the client is still usable.
    await expectUsable(client);
  });

  it('ends a run whose run frame is not JSON with failed{invalid_frame}', async () => {
    const { client } = spawnHost();
    // A JavaScript caller's request that JSON cannot encode.
    const handle = client.run({ message: 'x', turnEnv: { KEY: 1n } as never });
    expect(await handle.outcome).toMatchObject(notSent('invalid_frame', 'run'));
    await expectUsable(client);
  });

  it('ends a run whose cancel frame cannot be sent with failed{frame_too_large}', async () => {
    // A JavaScript caller's request without `message`: its run frame is three bytes shorter than
    // its cancel frame, so a cap of exactly its run frame lets the run out and not the cancel.
    // The longest runId (README "Rules in detail", Run ids) of characters JSON escapes (README
    // "The protocol", Writers) makes that cap large enough for the handshake.
    const runId = '\u2028'.repeat(256);
    const { client } = spawnHost({}, undefined, encodeFrame({ type: 'run', runId }).length - 1);
    await client.welcome;
    const controller = new AbortController();
    const handle = client.run(
      { runId, message: undefined as never },
      { signal: controller.signal },
    );
    // The run frame goes out in a microtask after the welcome; the host's answer needs I/O.
    await Promise.resolve();
    controller.abort();
    expect(await handle.outcome).toMatchObject(notSent('frame_too_large', 'cancel'));
    await expectUsable(client);
  });

  it('declines a question whose answer is over maxFrameBytes', async () => {
    const { client } = spawnCapped();
    const handle = client.run(
      { message: script({ op: 'question', prompt: 'why?' }) },
      { onQuestion: () => ({ freeText: 'because '.repeat(maxFrameBytes) }) },
    );
    const events: RunEvent[] = [];
    for await (const event of handle) events.push(event);
    expect(events.find((e) => e.type === 'question_resolved')).toMatchObject({
      outcome: 'declined',
    });
    expect(events.find((e) => e.type === 'text')).toMatchObject({
      delta: 'question:{"outcome":"declined"}',
    });
    expect(await handle.outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    await client.shutdown();
  });
});

describe('connectRunner against a hostile host', () => {
  it('does not answer a ping whose pong is over maxFrameBytes: reported, never thrown, reads on', async () => {
    // After its welcome, the host pings with an id of 256 U+2028: 3 bytes each in its ping, 6
    // each once the pong escapes them (README "The protocol", Writers). Then an ordinary ping,
    // and a log listing the pongs it got.
    const hostile = `
      const send = (frame) => process.stdout.write(JSON.stringify(frame) + '\\n');
      const pongs = [];
      require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
        const frame = JSON.parse(line);
        if (frame.type === 'hello') {
          send({ type: 'welcome', protocol: 1, host: { name: 'hostile' }, engines: [], capabilities: {} });
          send({ type: 'ping', id: '\\u2028'.repeat(256) });
          send({ type: 'ping', id: 'after' });
        } else if (frame.type === 'pong') {
          pongs.push(frame.id);
          if (frame.id === 'after') send({ type: 'log', level: 'info', message: JSON.stringify(pongs) });
        }
      });`;
    const child = spawn(process.execPath, ['-e', hostile], { stdio: ['pipe', 'pipe', 'inherit'] });
    const protocolErrors: string[] = [];
    const log = deferred<string>();
    const client = connectRunner({
      input: child.stdout,
      output: child.stdin,
      maxFrameBytes: 1024,
      onProtocolError: (message) => void protocolErrors.push(message),
      onLog: (frame) => log.resolve(frame.message),
    });
    expect(JSON.parse(await log.promise)).toEqual(['after']);
    expect(protocolErrors).toEqual([
      expect.stringMatching(
        /^ping not answered: frame of type "pong" is \d+ bytes, over the 1024-byte cap$/,
      ),
    ]);
    client.close();
    await client.closed;
    child.kill('SIGKILL');
  });

  it('callbacks that throw (onLog, onProtocolError): nothing escapes the input handler, reading goes on', async () => {
    // Two logs, an invalid log between them, then a ping: the pong proves the client still reads.
    const host = `
      const send = (frame) => process.stdout.write(JSON.stringify(frame) + '\\n');
      require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
        const frame = JSON.parse(line);
        if (frame.type === 'hello') {
          send({ type: 'welcome', protocol: 1, host: { name: 'h' }, engines: [], capabilities: {} });
          send({ type: 'log', level: 'info', message: 'first' });
          send({ type: 'log', level: 'shout', message: 3 });
          send({ type: 'log', level: 'info', message: 'second' });
          send({ type: 'ping', id: 'still-reading' });
        } else if (frame.type === 'pong') {
          send({ type: 'log', level: 'info', message: 'pong ' + frame.id });
        }
      });`;
    const child = spawn(process.execPath, ['-e', host], { stdio: ['pipe', 'pipe', 'inherit'] });
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => void uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    const logs: string[] = [];
    const reports: string[] = [];
    const done = deferred<void>();
    const client = connectRunner({
      input: child.stdout,
      output: child.stdin,
      onLog: (frame) => {
        logs.push(frame.message);
        if (frame.message === 'pong still-reading') done.resolve();
        throw new Error(`onLog fails on ${frame.message}`);
      },
      onProtocolError: (message) => {
        reports.push(message);
        throw new Error('onProtocolError fails too');
      },
    });
    try {
      await client.welcome;
      await done.promise;
      expect(logs).toEqual(['first', 'second', 'pong still-reading']);
      expect(reports).toContain('onLog threw: onLog fails on first');
      expect(reports.some((report) => report.startsWith('invalid "log" frame'))).toBe(true);
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
      client.close();
      await client.closed;
      child.kill('SIGKILL');
    }
  });
});

describe('connectRunnerSocket', () => {
  let host: SocketHost;
  beforeAll(async () => {
    host = await startSocketHost();
  });
  afterAll(() => host.stop());

  it('runs a turn over a unix socket and serves several connections', async () => {
    const first = await connectRunnerSocket(host.path);
    const second = await connectRunnerSocket(host.path);
    const [a, b] = await Promise.all([
      first.client.run({ message: 'one' }).outcome,
      second.client.run({ message: 'two' }).outcome,
    ]);
    expect(a).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(b).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    await first.client.shutdown();
    await second.client.shutdown();
    expect(first.socket.destroyed || first.socket.readableEnded).toBe(true);
  });

  it('rejects with ERR_CHANNEL_CLOSED when nothing listens', async () => {
    await expect(connectRunnerSocket(`${host.path}.missing`)).rejects.toMatchObject({
      code: 'ERR_CHANNEL_CLOSED',
    });
  });
});
