import { spawn } from 'node:child_process';
import { lstat, mkdir, readdir, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  connectRunnerSocket,
  serveRunnerSocket,
  type RunnerEngine,
  type RunnerSocketServer,
  type RunnerSocketServerOptions,
} from '../src/index.js';
import { RawPeer } from '../src/conformance/index.js';
import { tempDir } from './helpers.js';

const WAIT = 5000;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function echo(name: string): RunnerEngine<unknown> {
  return {
    id: name,
    displayName: name,
    async stream(message, _options, emitter) {
      await emitter.text(`${name}: ${message}`);
    },
  };
}

async function dir(): Promise<string> {
  const made = await tempDir();
  cleanups.push(made.cleanup);
  return made.path;
}

async function serve(
  path: string,
  name: string,
  extra: Partial<RunnerSocketServerOptions<unknown>> = {},
): Promise<RunnerSocketServer> {
  const server = await serveRunnerSocket(path, {
    session: () => ({ engine: echo(name), runtime: {} }),
    ...extra,
  });
  cleanups.push(() => server.close());
  return server;
}

async function peer(path: string): Promise<RawPeer> {
  const p = await RawPeer.open({ socket: path });
  cleanups.push(() => p.close());
  return p;
}

/** Which host answers on `path`: the engine id in its `welcome`. */
async function whoAnswers(path: string): Promise<string> {
  const p = await peer(path);
  await p.hello();
  const welcome = await p.waitFor((f) => f.type === 'welcome', WAIT, 'welcome');
  await p.close();
  return (welcome.engines as { id: string }[])[0]?.id ?? '';
}

/** Polls a condition the code under test has no event for (bounded, never a fixed sleep). */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + WAIT;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('serveRunnerSocket: the socket path (issue 9 W6)', () => {
  it("a second host refuses a live host's socket (ERR_SOCKET_IN_USE) and leaves it serving", async () => {
    const path = join(await dir(), 'h.sock');
    await serve(path, 'first');
    const before = await lstat(path);
    await expect(
      serveRunnerSocket(path, { session: () => ({ engine: echo('second'), runtime: {} }) }),
    ).rejects.toMatchObject({ code: 'ERR_SOCKET_IN_USE' });
    const after = await lstat(path);
    expect(after.ino).toBe(before.ino);
    expect(await whoAnswers(path)).toBe('first');
    // The failed start left nothing behind next to the socket.
    expect((await readdir(join(path, '..'))).sort()).toEqual(['h.sock']);
  });

  it('a host closing after another took over the path leaves the other one’s socket alone', async () => {
    const path = join(await dir(), 'h.sock');
    const first = await serve(path, 'first');
    // The first socket file is removed behind the first host's back; a second host starts.
    await unlink(path);
    const second = await serve(path, 'second');
    const seconds = await lstat(path);
    await first.close();
    expect((await lstat(path)).ino).toBe(seconds.ino);
    expect(await whoAnswers(path)).toBe('second');
    await second.close();
    await expect(lstat(path)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('replaces a stale socket that nothing answers on (a host killed with SIGKILL)', async () => {
    const path = join(await dir(), 'h.sock');
    const child = spawn(process.execPath, [
      '-e',
      `require('node:net').createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, 'SIGKILL'))`,
    ]);
    await new Promise((resolve) => child.once('exit', resolve));
    expect((await lstat(path)).isSocket()).toBe(true);
    await serve(path, 'fresh');
    expect(await whoAnswers(path)).toBe('fresh');
    expect((await stat(path)).mode & 0o777).toBe(0o660);
  });

  it('refuses a path that is not a socket (ERR_SOCKET_PATH) and leaves the file as it was', async () => {
    const path = join(await dir(), 'h.sock');
    await writeFile(path, 'precious');
    await expect(
      serveRunnerSocket(path, { session: () => ({ engine: echo('x'), runtime: {} }) }),
    ).rejects.toMatchObject({ code: 'ERR_SOCKET_PATH' });
    expect(await readFile(path, 'utf8')).toBe('precious');
  });
});

/** A fresh folder whose own path is exactly `length` bytes long. */
async function dirOfLength(length: number): Promise<string> {
  const base = await dir();
  const path = join(base, 'd'.repeat(length - base.length - 1));
  await mkdir(path);
  return path;
}

/** What Node binds or connects to for a longer path: its first 108 bytes (Linux `sun_path`). */
function cutByNode(path: string): string {
  return Buffer.from(path).subarray(0, 108).toString();
}

describe('socket paths too long for the kernel (ERR_SOCKET_PATH)', () => {
  it('serveRunnerSocket refuses a path whose private bind name does not fit, and creates nothing (no socket bound under a cut name beside it)', async () => {
    // `<d>/h.sock` fits; the socket is bound first at `<d>/.pw-sock-XXXXXX/s`, which Node cuts
    // inside the private folder's name: `<d>/.pw-sock-XX`, a socket beside the path, in a folder
    // others may share, with the umask's mode.
    const parent = await dirOfLength(96);
    const path = join(parent, 'h.sock');
    await expect(
      serveRunnerSocket(path, { session: () => ({ engine: echo('x'), runtime: {} }) }),
    ).rejects.toMatchObject({ code: 'ERR_SOCKET_PATH' });
    expect(await readdir(parent)).toEqual([]);
  });

  it('serveRunnerSocket refuses a path over the limit before touching anything, even a stale socket there', async () => {
    const parent = await dirOfLength(40);
    const path = join(parent, 's'.repeat(120));
    await expect(
      serveRunnerSocket(path, { session: () => ({ engine: echo('x'), runtime: {} }) }),
    ).rejects.toMatchObject({ code: 'ERR_SOCKET_PATH' });
    expect(await readdir(parent)).toEqual([]);
  });

  it('connectRunnerSocket refuses a path over the limit: a socket planted at the name Node would cut it to receives nothing', async () => {
    // The driver's path crosses the limit inside a folder name: the cut name is a file in the
    // shared parent, where another local user plants a listener.
    const shared = await dir();
    const planted = join(shared, 'p'.repeat(108 - shared.length - 1));
    const path = join(`${planted}${'q'.repeat(20)}`, 'host.sock');
    expect(cutByNode(path)).toBe(planted);
    const received: string[] = [];
    const accepted: Socket[] = [];
    const attacker = createServer((connection) => {
      accepted.push(connection);
      connection.on('data', (chunk: Buffer) => received.push(chunk.toString('utf8')));
    });
    await new Promise<void>((resolve) => attacker.listen(planted, resolve));
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          for (const connection of accepted) connection.destroy();
          attacker.close(() => resolve());
        }),
    );

    const attempt = connectRunnerSocket(path, { idleTimeoutMs: 60_000 });
    const settled = await attempt.then(
      async ({ client, socket }) => {
        // Without the check the client speaks to the attacker, whose `welcome` would get it the
        // driver's run frames (model token included).
        await until(() => received.join('').includes('"hello"'), 'the hello to reach the attacker');
        client.close();
        socket.destroy();
        return 'connected to the planted socket';
      },
      (error: unknown) => error,
    );
    expect(settled).toMatchObject({ code: 'ERR_SOCKET_PATH' });
    expect(accepted).toHaveLength(0);
    expect(received).toEqual([]);
  });

  it('the conformance kit refuses such a path too: RawPeer.open never reaches a socket planted at the cut name', async () => {
    const shared = await dir();
    const planted = join(shared, 'p'.repeat(108 - shared.length - 1));
    const path = join(`${planted}${'q'.repeat(20)}`, 'host.sock');
    expect(cutByNode(path)).toBe(planted);
    const accepted: Socket[] = [];
    const attacker = createServer((connection) => void accepted.push(connection));
    await new Promise<void>((resolve) => attacker.listen(planted, resolve));
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          for (const connection of accepted) connection.destroy();
          attacker.close(() => resolve());
        }),
    );
    const settled = await RawPeer.open({ socket: path }).then(
      async (opened) => {
        await opened.close();
        return 'connected to the planted socket';
      },
      (error: unknown) => error,
    );
    expect(settled).toMatchObject({ code: 'ERR_SOCKET_PATH' });
    expect(accepted).toHaveLength(0);
  });
});

describe('serveRunnerSocket: connections and input memory (issue 9 W14)', () => {
  it('refuses connections over maxConnections with fatal{too_many_connections}; the others keep working', async () => {
    const path = join(await dir(), 'h.sock');
    const server = await serve(path, 'e', { maxConnections: 2 });
    const a = await peer(path);
    const b = await peer(path);
    await a.hello();
    await b.hello();
    await a.waitFor((f) => f.type === 'welcome', WAIT, 'welcome a');
    await b.waitFor((f) => f.type === 'welcome', WAIT, 'welcome b');
    const c = await peer(path);
    await c.hello();
    const fatal = await c.waitFor((f) => f.type === 'fatal', WAIT, 'fatal');
    expect(fatal.code).toBe('too_many_connections');
    expect(await c.waitClosed(WAIT)).toBe(true);
    expect(c.frames.map((f) => f.type)).toEqual(['fatal']);
    expect(server.connections).toBe(2);
    await a.send({ type: 'run', runId: 'r', message: 'still here' });
    const text = await a.waitFor((f) => f.type === 'text', WAIT, 'text');
    expect(text.delta).toBe('e: still here');
    // A slot freed is a slot available again.
    await b.close();
    await until(() => server.connections === 1, 'the closed session to end');
    const d = await peer(path);
    await d.hello();
    await d.waitFor((f) => f.type === 'welcome', WAIT, 'welcome d');
  });

  it('bounds the partial-frame memory of all connections together; over-budget frames are skipped, connections live on', async () => {
    const path = join(await dir(), 'h.sock');
    const budget = 256 * 1024;
    const server = await serve(path, 'e', {
      maxConnections: 6,
      maxBufferedInputBytes: budget,
      session: () => ({ engine: echo('e'), runtime: {}, maxFrameBytes: 1024 * 1024 }),
    });
    const peers: RawPeer[] = [];
    for (let i = 0; i < 6; i += 1) {
      const p = await peer(path);
      await p.hello();
      await p.waitFor((f) => f.type === 'welcome', WAIT, 'welcome');
      peers.push(p);
    }
    // Each connection starts a 200 KiB frame and holds it open.
    const partial = `{"type":"run","runId":"big","message":"${'x'.repeat(200 * 1024)}`;
    for (const p of peers) await p.write(partial);
    // Whatever the interleaving, the connections never hold more than the budget together.
    await until(() => server.inputBudget.used > 0, 'the first partial frame to be buffered');
    expect(server.inputBudget.used).toBeLessThanOrEqual(budget);
    for (const p of peers) await p.write('"}\n');
    const outcomes = await Promise.all(
      peers.map((p) =>
        p.waitFor(
          (f) => f.type === 'accepted' || (f.type === 'log' && f.code === 'input_budget_exceeded'),
          WAIT,
          'accepted or input_budget_exceeded',
        ),
      ),
    );
    const kinds = outcomes.map((f) => f.type);
    expect(kinds).toContain('accepted');
    expect(kinds).toContain('log');
    expect(server.inputBudget.used).toBeLessThanOrEqual(budget);
    // Every connection, refused frame or not, still answers.
    for (const [i, p] of peers.entries()) {
      await p.send({ type: 'ping', id: `after-${i}` });
      await p.waitFor((f) => f.type === 'pong' && f.id === `after-${i}`, WAIT, 'pong after');
    }
    await until(() => server.inputBudget.used === 0, 'the budget to be released');
  });
});

describe('serveRunnerSocket: engine lifetime (issue 9 W7)', () => {
  it('one session ending (or running with another token) never disposes the engine another session is using mid-turn', async () => {
    const path = join(await dir(), 'h.sock');
    const events: string[] = [];
    const tokens = new Map<string, string>();
    let releaseA!: () => void;
    const gateA = new Promise<void>((resolve) => (releaseA = resolve));
    const shared: RunnerEngine<unknown> = {
      id: 'shared',
      displayName: 'Shared',
      async stream(message, options, emitter) {
        // Per-session state, keyed the way the README tells engines to key it.
        const session = options.hostSessionId ?? '';
        tokens.set(session, options.modelToken ?? '');
        if (message === 'slow') await gateA;
        await emitter.text(`${message} done, disposed=${events.includes('dispose')}`);
      },
      endSession(hostSessionId) {
        events.push(`end:${tokens.get(hostSessionId) ?? '?'}`);
        tokens.delete(hostSessionId);
      },
      dispose() {
        events.push('dispose');
      },
    };
    const server = await serveRunnerSocket(path, {
      session: () => ({ engine: shared, runtime: {} }),
    });
    const a = await peer(path);
    const b = await peer(path);
    await a.hello();
    await b.hello();
    await a.send({ type: 'run', runId: 'a1', message: 'slow', modelToken: 'token-of-session-a' });
    await a.waitFor((f) => f.type === 'accepted', WAIT, 'a accepted');
    await b.send({ type: 'run', runId: 'b1', message: 'quick', modelToken: 'token-of-session-b' });
    await b.waitFor((f) => f.type === 'result', WAIT, 'b result');
    await b.send({ type: 'shutdown' });
    await b.waitFor((f) => f.type === 'bye', WAIT, 'b bye');
    await until(() => server.connections === 1, 'session b to end');
    // B's session state is gone, A's is intact, and the engine was not disposed.
    expect(events).toEqual(['end:token-of-session-b']);
    expect([...tokens.values()]).toEqual(['token-of-session-a']);
    releaseA();
    const text = await a.waitFor((f) => f.type === 'text', WAIT, 'a text');
    expect(text.delta).toBe('slow done, disposed=false');
    expect(await a.waitFor((f) => f.type === 'result', WAIT, 'a result')).toMatchObject({
      stopReason: 'end_turn',
    });
    await server.close();
    expect(events).toEqual(['end:token-of-session-b', 'end:token-of-session-a', 'dispose']);
  });
});
