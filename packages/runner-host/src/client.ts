import { spawn, type ChildProcessByStdio, type SpawnOptions } from 'node:child_process';
import { createConnection, type Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { ClientChannel } from './client-channel.js';
import { ClientHandshake } from './client-handshake.js';
import { ClientLiveness } from './client-liveness.js';
import { ClientRunTable } from './client-runs.js';
import { RunnerHostError } from './errors.js';
import { assertSocketPathFits } from './socket-path.js';
import type {
  Capabilities,
  FailedFrame,
  HostFrame,
  LogFrame,
  PeerInfo,
  PingFrame,
  QuestionFrame,
  ResultFrame,
  RunEventFrame,
  RunFrame,
  WelcomeFrame,
} from './frames.js';

/** Everything a run frame carries except `type`; `runId` defaults to a random UUID. */
export type RunRequest = Omit<RunFrame, 'type' | 'runId'> & { runId?: string };

/** A run's events, in `seq` order; the last one is its terminal frame. */
export type RunEvent = RunEventFrame;

/**
 * How a run ended: the host's terminal frame, or a `failed` made by the client (`host_lost`, or
 * a run or cancel frame it could not send: README "Frames the client cannot send").
 */
export type RunOutcome = ResultFrame | FailedFrame;

/** What `onQuestion` returns: chosen options and/or free text, or a decline. */
export type QuestionAnswer = { selected?: string[]; freeText?: string } | { decline: true };

export interface RunOptions {
  /** Aborting sends `cancel`; the run then ends with `result{stopReason:"cancelled"}`. */
  signal?: AbortSignal;
  /** Answers the engine's questions; without it every question is declined. */
  onQuestion?: (
    question: QuestionFrame,
    context: { signal: AbortSignal },
  ) => QuestionAnswer | Promise<QuestionAnswer>;
  /**
   * Receives every event as it arrives. When given, events are not buffered for iteration
   * (use it when you only await `outcome`).
   */
  onEvent?: (event: RunEvent) => void;
}

export interface RunHandle extends AsyncIterable<RunEvent> {
  readonly runId: string;
  /** Resolves with the terminal frame (never rejects). */
  readonly outcome: Promise<RunOutcome>;
}

export interface ConnectRunnerOptions {
  /** Frames from the host (a child's stdout, a socket). */
  input: Readable;
  /** Frames to the host (a child's stdin, a socket). */
  output: Writable;
  /** Sent in `hello.client`. */
  client?: PeerInfo;
  /** Versions offered in `hello`. Default: every version this package speaks. */
  protocols?: readonly number[];
  /** Default `{ questions: true }`. */
  capabilities?: Capabilities;
  /** A host silent this long (while a run, handshake or ping is pending) is lost. Default 30000 ms. */
  idleTimeoutMs?: number;
  /** Ping a quiet host this often while something is pending. Default `idleTimeoutMs / 3`. */
  pingIntervalMs?: number;
  /** Events buffered for iteration above which the client stops reading. Default 4096. */
  maxBufferedEvents?: number;
  maxFrameBytes?: number;
  /** Receives the host's `log` frames. */
  onLog?: (frame: LogFrame) => void;
  /** Receives frames that are not valid, reported as text. */
  onProtocolError?: (message: string) => void;
  /** Clock and timers, for tests. */
  now?: () => number;
  timers?: {
    setTimeout(callback: () => void, ms: number): unknown;
    clearTimeout(handle: unknown): void;
  };
}

export interface RunnerClient {
  /** The host's `welcome`; rejects with `ERR_HANDSHAKE` on `fatal` or a lost channel. */
  readonly welcome: Promise<WelcomeFrame>;
  run(request: RunRequest, options?: RunOptions): RunHandle;
  /** Round trip of one `ping`, in milliseconds. Rejects with `ERR_CHANNEL_CLOSED`. */
  ping(): Promise<number>;
  /** Sends `shutdown` and resolves once the host closed the channel (or after the idle timeout). */
  shutdown(): Promise<void>;
  /** Closes the channel now; active runs end with `failed{code:"host_lost"}`. */
  close(): void;
  /** Resolves when the channel is closed, for whatever reason. */
  readonly closed: Promise<void>;
}

const defaultTimers = {
  setTimeout: (callback: () => void, ms: number): unknown => {
    const handle = setTimeout(callback, ms);
    handle.unref();
    return handle;
  },
  clearTimeout: (handle: unknown) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Speaks the driver side of the protocol over any pair of byte streams. */
export function connectRunner(options: ConnectRunnerOptions): RunnerClient {
  // Built from its units: the channel (frames in and out, flow control), the handshake, the run
  // table and the liveness watch.
  const idleTimeoutMs = options.idleTimeoutMs ?? 30_000;
  const now = options.now ?? (() => performance.now());
  const timers = options.timers ?? defaultTimers;
  const { onProtocolError, onLog } = guardedCallbacks(options);
  const handshake = new ClientHandshake();
  const channel = new ClientChannel(options.input, options.output, {
    maxFrameBytes: options.maxFrameBytes,
    maxBufferedEvents: options.maxBufferedEvents ?? 4096,
    now,
    timers,
    onProtocolError,
    onLost: lose,
  });
  const runs = new ClientRunTable({
    channel,
    welcome: handshake.welcome,
    onProtocolError,
    watch: () => liveness.arm(),
  });
  const liveness = new ClientLiveness({
    channel,
    timers,
    now,
    idleTimeoutMs,
    pingIntervalMs: options.pingIntervalMs ?? Math.max(1, Math.floor(idleTimeoutMs / 3)),
    welcomed: () => handshake.welcomed,
    waiting: () => !handshake.welcomed || runs.size > 0,
    lose,
  });

  function lose(reason: string): void {
    if (!channel.beginClose()) return;
    handshake.lost(reason);
    liveness.stop(reason);
    runs.loseAll(reason);
    channel.finishClose();
  }

  const targets: FrameTargets = {
    handshake,
    liveness,
    runs,
    channel,
    lose,
    onLog,
    onProtocolError,
  };
  channel.read((frame) => routeHostFrame(frame, targets));
  channel.send(handshake.hello(options));
  liveness.arm();

  return {
    welcome: handshake.welcome,
    closed: channel.closed,
    run: (request, runOptions = {}) => runs.start(request, runOptions),
    ping: () => liveness.ping(),
    shutdown: async () => {
      if (channel.isClosed) return;
      channel.send({ type: 'shutdown' });
      await channel.awaitHostClose(idleTimeoutMs);
      lose('client shut down');
      await channel.closed;
    },
    close: () => lose('client closed'),
  };
}

/**
 * The caller's `onProtocolError` and `onLog`, made unable to throw: they run inside the input
 * handler, where a throw would be uncaught (ending the embedding process) and reading would stop
 * (README "Frames the client cannot send"). A throwing `onLog` is reported to `onProtocolError`;
 * a throwing `onProtocolError` has nowhere left to report to, and reading goes on.
 */
function guardedCallbacks(options: ConnectRunnerOptions): {
  onProtocolError: ((message: string) => void) | undefined;
  onLog: ((frame: LogFrame) => void) | undefined;
} {
  const report = options.onProtocolError;
  const onProtocolError =
    report === undefined
      ? undefined
      : (message: string) => {
          try {
            report(message);
          } catch {
            // Reported where the caller asked; a callback that throws loses only its report.
          }
        };
  const log = options.onLog;
  const onLog =
    log === undefined
      ? undefined
      : (frame: LogFrame) => {
          try {
            log(frame);
          } catch (error) {
            onProtocolError?.(`onLog threw: ${(error as Error)?.message ?? String(error)}`);
          }
        };
  return { onProtocolError, onLog };
}

interface FrameTargets {
  handshake: ClientHandshake;
  liveness: ClientLiveness;
  runs: ClientRunTable;
  channel: ClientChannel;
  lose: (reason: string) => void;
  onLog: ((frame: LogFrame) => void) | undefined;
  onProtocolError: ((message: string) => void) | undefined;
}

/** Hands each host frame to the unit that answers it. */
function routeHostFrame(frame: HostFrame, to: FrameTargets): void {
  switch (frame.type) {
    case 'welcome':
      return to.handshake.accept(frame);
    case 'fatal':
      to.handshake.refuse(frame);
      return to.lose(`host sent fatal ${frame.code}: ${frame.message}`);
    case 'ping':
      return answerPing(frame, to);
    case 'pong':
      return to.liveness.pong(frame);
    case 'log':
      return to.onLog?.(frame);
    case 'bye':
      return;
    default:
      return to.runs.route(frame);
  }
}

/**
 * Answers the host's `ping` with a `pong` echoing its id. This runs inside the input handler,
 * where a throw would be uncaught: a pong over `maxFrameBytes` (an id that grows when escaped,
 * from a hostile host) is not sent but reported as a protocol error, and reading goes on
 * (README "Frames the client cannot send").
 */
function answerPing(frame: PingFrame, to: FrameTargets): void {
  try {
    to.channel.send(frame.id !== undefined ? { type: 'pong', id: frame.id } : { type: 'pong' });
  } catch (error) {
    to.onProtocolError?.(`ping not answered: ${(error as Error).message}`);
  }
}

export interface SpawnRunnerOptions extends Omit<ConnectRunnerOptions, 'input' | 'output'> {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Where the child's stderr goes. Default `"inherit"`. */
  stderr?: 'inherit' | 'pipe' | 'ignore';
}

export interface SpawnedRunner {
  client: RunnerClient;
  child: ChildProcessByStdio<Writable, Readable, Readable | null>;
}

/** Starts a host as a child process and speaks to it over its stdin/stdout. */
export function spawnRunner(
  command: string,
  args: readonly string[] = [],
  options: SpawnRunnerOptions = {},
): SpawnedRunner {
  const { cwd, env, stderr = 'inherit', ...clientOptions } = options;
  const spawnOptions: SpawnOptions = { stdio: ['pipe', 'pipe', stderr] };
  if (cwd !== undefined) spawnOptions.cwd = cwd;
  if (env !== undefined) spawnOptions.env = env;
  let child: SpawnedRunner['child'];
  try {
    child = spawn(command, [...args], spawnOptions) as SpawnedRunner['child'];
  } catch (error) {
    throw new RunnerHostError(
      'ERR_SPAWN',
      `could not start ${command}: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  const client = connectRunner({ ...clientOptions, input: child.stdout, output: child.stdin });
  child.on('error', () => client.close());
  return { client, child };
}

/** Connects to a host listening on a unix socket. */
export async function connectRunnerSocket(
  path: string,
  options: Omit<ConnectRunnerOptions, 'input' | 'output'> = {},
): Promise<{ client: RunnerClient; socket: Socket }> {
  // A longer path would be cut to another name, where anyone may have planted a socket to
  // receive the run frames (socket-path.ts).
  assertSocketPathFits(path, 'the socket path');
  const socket = createConnection({ path });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', (error) =>
      reject(
        new RunnerHostError('ERR_CHANNEL_CLOSED', `cannot connect to ${path}: ${error.message}`, {
          cause: error,
        }),
      ),
    );
  });
  return { client: connectRunner({ ...options, input: socket, output: socket }), socket };
}
