import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ClientChannel } from '../src/client-channel.js';
import { ClientHandshake } from '../src/client-handshake.js';
import { ClientLiveness } from '../src/client-liveness.js';
import type { WelcomeFrame } from '../src/index.js';
import { ManualTimers } from './helpers.js';

/** A liveness watch over a real channel on PassThroughs, with the clock and timers injected. */
function watch(options: { welcomed?: boolean; waiting?: boolean } = {}) {
  let clock = 0;
  const now = () => clock;
  const timers = new ManualTimers();
  const input = new PassThrough();
  const output = new PassThrough();
  const sent: Record<string, unknown>[] = [];
  output.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) if (line !== '') sent.push(JSON.parse(line));
  });
  const lost: string[] = [];
  const channel = new ClientChannel(input, output, {
    maxBufferedEvents: 4,
    now,
    timers,
    onLost: (reason) => void lost.push(reason),
  });
  const liveness = new ClientLiveness({
    channel,
    timers,
    now,
    idleTimeoutMs: 300,
    pingIntervalMs: 100,
    welcomed: () => options.welcomed ?? true,
    waiting: () => options.waiting ?? true,
    lose: (reason) => void lost.push(reason),
  });
  const tick = async (ms: number) => {
    clock += ms;
    timers.fireAll();
    await new Promise<void>((resolve) => setImmediate(resolve));
  };
  return { channel, liveness, timers, input, sent, lost, tick };
}

describe('ClientLiveness', () => {
  it('pings a quiet host while something waits, and declares it lost after the idle timeout', async () => {
    const { liveness, sent, lost, tick } = watch();
    liveness.arm();
    await tick(50);
    expect(sent).toEqual([]);
    await tick(100);
    expect(sent).toEqual([{ type: 'ping', id: 'idle-1' }]);
    expect(lost).toEqual([]);
    await tick(200);
    expect(lost).toEqual(['no frame from the host for 350 ms']);
  });

  it('sends no idle ping before the welcome, and watches nothing when nothing waits', async () => {
    const early = watch({ welcomed: false });
    early.liveness.arm();
    await early.tick(150);
    expect(early.sent).toEqual([]);
    const idle = watch({ waiting: false });
    idle.liveness.arm();
    expect(idle.timers.pending).toBe(0);
  });

  it('does not count the time its own reading is paused as the host being quiet', async () => {
    const { channel, liveness, lost, tick } = watch();
    channel.change(4);
    expect(channel.paused).toBe(true);
    liveness.arm();
    await tick(1000);
    await tick(1000);
    expect(lost).toEqual([]);
    channel.change(-4);
    expect(channel.paused).toBe(false);
    await tick(299);
    expect(lost).toEqual([]);
    await tick(1);
    expect(lost).toHaveLength(1);
  });

  it("measures a ping's round trip; stopping fails the pings still waiting", async () => {
    const { liveness, sent, tick } = watch();
    const first = liveness.ping();
    await tick(0);
    expect(sent).toEqual([{ type: 'ping', id: 'p1' }]);
    await tick(40);
    liveness.pong({ type: 'pong', id: 'p1' });
    expect(await first).toBe(40);
    const second = liveness.ping();
    liveness.stop('gone');
    await expect(second).rejects.toMatchObject({ code: 'ERR_CHANNEL_CLOSED', message: 'gone' });
  });
});

describe('ClientChannel flow control', () => {
  it('pauses reading at maxBufferedEvents and resumes at half of it', () => {
    const { channel, input } = watch();
    channel.read(() => {});
    channel.change(3);
    expect(input.isPaused()).toBe(false);
    channel.change(1);
    expect(input.isPaused()).toBe(true);
    channel.change(-1);
    expect(input.isPaused()).toBe(true);
    channel.change(-1);
    expect(input.isPaused()).toBe(false);
  });
});

describe('ClientHandshake', () => {
  it('offers every supported version by default and takes the first welcome only', async () => {
    const handshake = new ClientHandshake();
    expect(handshake.hello({})).toEqual({
      type: 'hello',
      protocols: [1],
      capabilities: { questions: true },
    });
    const welcome: WelcomeFrame = {
      type: 'welcome',
      protocol: 1,
      host: { name: 'h' },
      engines: [],
      capabilities: {},
    };
    handshake.accept(welcome);
    handshake.accept({ ...welcome, protocol: 2 });
    handshake.lost('late');
    expect(await handshake.welcome).toBe(welcome);
  });

  it('rejects with ERR_HANDSHAKE on a refusal or a lost channel', async () => {
    const refused = new ClientHandshake();
    refused.refuse({ type: 'fatal', code: 'unsupported_protocol', message: 'no' });
    await expect(refused.welcome).rejects.toMatchObject({
      code: 'ERR_HANDSHAKE',
      message: 'host refused: unsupported_protocol: no',
    });
    const lost = new ClientHandshake();
    lost.lost('eof');
    await expect(lost.welcome).rejects.toMatchObject({ message: 'no welcome: eof' });
  });
});
