import { chmod, link, lstat, mkdtemp, rmdir, unlink } from 'node:fs/promises';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { PassThrough } from 'node:stream';
import { InputBudget, encodeFrame } from './codec.js';
import { RunnerHostError } from './errors.js';
import type { RunnerEngine } from './engine.js';
import { assertSocketPathFits } from './socket-path.js';
import { startRunnerHost, type RunnerHostOptions } from './host.js';
import { timerDelay } from './host-limits.js';

/**
 * What each connection's host is started with (its `input` and `output` are the connection; its
 * `helloTimeoutMs` is the server's).
 */
export type SocketSessionOptions<TRuntime> = Omit<
  RunnerHostOptions<TRuntime>,
  'input' | 'output' | 'helloTimeoutMs'
>;

export interface RunnerSocketServerOptions<TRuntime> {
  /** Options of the host started for each connection (called once per connection). */
  session: () => SocketSessionOptions<TRuntime>;
  /**
   * Connections served at once. One more is answered with `fatal{code:"too_many_connections"}`
   * and closed without being read. Default 8.
   */
  maxConnections?: number;
  /**
   * Bytes of partial frames all connections may hold together (each connection also has the
   * frame cap). A frame that does not fit is skipped with `log{code:"input_budget_exceeded"}`.
   * Default 64 MiB.
   */
  maxBufferedInputBytes?: number;
  /**
   * How long a connection may take to complete its handshake (a whole `hello` line). One that
   * has not is sent `fatal{code:"hello_timeout"}` and closed, which frees its slot: otherwise
   * `maxConnections` silent connections (anyone who may open the socket) would lock every driver
   * out for as long as they stay open. Default 10000 ms; from 1 to 2147483647.
   */
  helloTimeoutMs?: number;
  /** Mode of the socket file. Default `0o660`. */
  mode?: number;
  /** How long the probe of an existing socket may wait for an answer. Default 1000 ms. */
  probeTimeoutMs?: number;
}

export interface RunnerSocketServer {
  readonly path: string;
  /** Connections being served now. */
  readonly connections: number;
  /** The shared input budget (for monitoring). */
  readonly inputBudget: InputBudget;
  /**
   * Stops accepting, ends every session as an EOF would (active runs end `cancelled`, `bye`),
   * waits for them, and removes the socket file only if it is still the one this server bound.
   */
  close(): Promise<void>;
}

const DEFAULT_MAX_CONNECTIONS = 8;
const DEFAULT_MAX_BUFFERED_INPUT = 64 * 1024 * 1024;
// A driver sends `hello` as soon as it connects (`connectRunnerSocket` does, in the same tick):
// seconds leave room for a loaded machine, and a stuck slot frees well within a client's own
// 30 s idle timeout.
const DEFAULT_HELLO_TIMEOUT_MS = 10_000;

function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

/** Whether something accepts connections on `path` (fails closed: no clear "nobody" is "yes"). */
async function probe(path: string, timeoutMs: number): Promise<'live' | 'stale' | 'gone'> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(path);
    const timer = setTimeout(() => finish('live'), timeoutMs);
    function finish(verdict: 'live' | 'stale' | 'gone' | Error): void {
      clearTimeout(timer);
      socket.destroy();
      if (verdict instanceof Error) reject(verdict);
      else resolve(verdict);
    }
    socket.once('connect', () => finish('live'));
    socket.once('error', (error) => {
      const code = errnoOf(error);
      if (code === 'ECONNREFUSED') finish('stale');
      else if (code === 'ENOENT') finish('gone');
      // EAGAIN: a listener whose backlog is full is still a listener.
      else if (code === 'EAGAIN') finish('live');
      else
        finish(
          new RunnerHostError('ERR_SOCKET_PATH', `cannot probe ${path}: ${error.message}`, {
            cause: error,
          }),
        );
    });
  });
}

/**
 * Makes `path` free for a new socket. A socket nothing answers on is stale and removed (only if
 * it is still the same file when removed); a live one or anything that is not a socket is
 * refused, never touched.
 */
async function clearStaleSocket(path: string, probeTimeoutMs: number): Promise<void> {
  let info;
  try {
    info = await lstat(path);
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return;
    throw new RunnerHostError('ERR_SOCKET_PATH', `cannot inspect ${path}`, { cause: error });
  }
  if (!info.isSocket()) {
    throw new RunnerHostError(
      'ERR_SOCKET_PATH',
      `refusing to replace ${path}: it exists and is not a socket`,
    );
  }
  const verdict = await probe(path, probeTimeoutMs);
  if (verdict === 'live') {
    throw new RunnerHostError(
      'ERR_SOCKET_IN_USE',
      `another host is serving ${path}: refusing to take its socket`,
    );
  }
  if (verdict === 'gone') return;
  const again = await lstat(path).catch(() => undefined);
  if (again !== undefined && again.ino === info.ino && again.dev === info.dev) {
    await unlink(path).catch((error: unknown) => {
      if (errnoOf(error) !== 'ENOENT') {
        throw new RunnerHostError('ERR_SOCKET_PATH', `cannot remove stale ${path}`, {
          cause: error,
        });
      }
    });
  }
}

function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** The private folder a socket is bound in first (`mkdtemp` adds six characters). */
const PRIVATE_DIR_PREFIX = '.pw-sock-';
const BOUND_NAME = 's';

/**
 * Binds a socket at `path` without ever replacing a file there. The socket is bound inside a
 * private folder next to `path`, given its mode, and then hard-linked into place: `link` fails
 * if anything appeared at `path` meanwhile, where a bind-then-rename would replace it. It also
 * keeps Node's own clean-up (which unlinks the bound name on close, whatever file is there by
 * then) away from `path`.
 */
async function bindExclusive(
  server: Server,
  path: string,
  mode: number,
): Promise<{ dev: number; ino: number }> {
  let privateDir: string;
  try {
    privateDir = await mkdtemp(join(dirname(path), PRIVATE_DIR_PREFIX));
  } catch (error) {
    throw new RunnerHostError('ERR_SOCKET_PATH', `cannot create a socket next to ${path}`, {
      cause: error,
    });
  }
  const bound = join(privateDir, BOUND_NAME);
  try {
    await listen(server, bound);
    await chmod(bound, mode);
    try {
      await link(bound, path);
    } catch (error) {
      if (errnoOf(error) === 'EEXIST') {
        throw new RunnerHostError(
          'ERR_SOCKET_IN_USE',
          `${path} appeared while this host was starting: refusing to replace it`,
          { cause: error },
        );
      }
      throw new RunnerHostError('ERR_SOCKET_PATH', `cannot create ${path}`, { cause: error });
    }
    const info = await lstat(path);
    return { dev: info.dev, ino: info.ino };
  } catch (error) {
    server.close();
    throw error instanceof RunnerHostError
      ? error
      : new RunnerHostError('ERR_SOCKET_PATH', `cannot listen on ${path}`, { cause: error });
  } finally {
    await unlink(bound).catch(() => undefined);
    await rmdir(privateDir).catch(() => undefined);
  }
}

function positiveInteger(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RunnerHostError('ERR_INVALID_OPTIONS', `${name} must be a whole number >= 1`);
  }
  return value;
}

/**
 * Serves the protocol on a unix socket, one host per connection (README "Serving a socket"):
 * refuses to take over a socket another host answers on, bounds connections and the memory of
 * their partial frames, and on close removes the socket only if it is still its own.
 */
export async function serveRunnerSocket<TRuntime>(
  path: string,
  options: RunnerSocketServerOptions<TRuntime>,
): Promise<RunnerSocketServer> {
  if (typeof options.session !== 'function') {
    throw new RunnerHostError(
      'ERR_INVALID_OPTIONS',
      'serveRunnerSocket needs a `session` function',
    );
  }
  const maxConnections = positiveInteger(
    options.maxConnections,
    DEFAULT_MAX_CONNECTIONS,
    'maxConnections',
  );
  const budget = new InputBudget(options.maxBufferedInputBytes ?? DEFAULT_MAX_BUFFERED_INPUT);
  const helloTimeoutMs =
    timerDelay(options.helloTimeoutMs, 'helloTimeoutMs') ?? DEFAULT_HELLO_TIMEOUT_MS;
  const mode = options.mode ?? 0o660;
  const probeTimeoutMs = options.probeTimeoutMs ?? 1000;

  const sessions = new Map<Socket, { end: () => void; done: Promise<void> }>();
  // Engines may be shared by every session: no session disposes them, the server does, once,
  // when no session is left (README "Engine lifetime").
  const engines = new Set<RunnerEngine<TRuntime>>();
  let disposeWithin = 5000;
  let closing = false;

  const server = createServer({ allowHalfOpen: true }, (socket) => {
    socket.on('error', () => {});
    if (closing || sessions.size >= maxConnections) {
      // Answer, then close without reading: a refused connection costs no input memory.
      socket.pause();
      const refusal = encodeFrame({
        type: 'fatal',
        code: 'too_many_connections',
        message: closing
          ? 'the host is closing'
          : `this host serves at most ${maxConnections} connections at once`,
      });
      socket.end(refusal, () => socket.destroy());
      return;
    }
    // The host reads through its own stream, so that close() can end a session like an EOF.
    const input = new PassThrough();
    socket.pipe(input);
    const end = () => {
      socket.unpipe(input);
      input.end();
    };
    let done: Promise<void>;
    try {
      const session = options.session();
      for (const engine of [
        ...(session.engine !== undefined ? [session.engine] : []),
        ...(session.engines ?? []),
      ]) {
        engines.add(engine);
      }
      if (session.cancelGraceMs !== undefined) disposeWithin = session.cancelGraceMs;
      done = startRunnerHost({
        ...session,
        disposeEngines: false,
        inputBudget: budget,
        helloTimeoutMs,
        input,
        output: socket,
      }).done.then(() => {
        sessions.delete(socket);
        socket.destroy();
      });
    } catch {
      // Invalid session options: nothing can be served on this connection.
      socket.destroy();
      return;
    }
    sessions.set(socket, { end, done });
  });

  // Both names the socket gets must fit whole, checked before anything is touched: a longer
  // one is cut by Node to another name, possibly in another folder (socket-path.ts).
  assertSocketPathFits(path, 'the socket path');
  assertSocketPathFits(
    join(dirname(path), `${PRIVATE_DIR_PREFIX}XXXXXX`, BOUND_NAME),
    `the socket is bound first beside ${path}, at`,
  );
  await clearStaleSocket(path, probeTimeoutMs);
  const ours = await bindExclusive(server, path, mode);

  let closed: Promise<void> | undefined;
  return {
    path,
    get connections() {
      return sessions.size;
    },
    inputBudget: budget,
    close() {
      closed ??= (async () => {
        closing = true;
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const session of sessions.values()) session.end();
        await Promise.allSettled([...sessions.values()].map((s) => s.done));
        await stopped;
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          Promise.allSettled(
            [...engines].map((engine) => Promise.resolve().then(() => engine.dispose?.())),
          ),
          new Promise<void>((resolve) => {
            timer = setTimeout(resolve, disposeWithin);
          }),
        ]);
        clearTimeout(timer);
        // Remove the socket only if it is still the one bound here: another host may own the
        // path by now (docs: README "Serving a socket").
        const now = await lstat(path).catch(() => undefined);
        if (now !== undefined && now.dev === ours.dev && now.ino === ours.ino) {
          await unlink(path).catch(() => undefined);
        }
      })();
      return closed;
    },
  };
}
