import { spawn, type ChildProcessByStdio, type SpawnOptions } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createConnection, type Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { ClientRun } from './client-run.js';
import { FrameWriter, readFrames } from './codec.js';
import { RunnerHostError } from './errors.js';
import {
  SUPPORTED_PROTOCOLS,
  parseHostFrame,
  type Capabilities,
  type FailedFrame,
  type HostFrame,
  type LogFrame,
  type PeerInfo,
  type QuestionFrame,
  type ResultFrame,
  type RunEventFrame,
  type RunFrame,
  type WelcomeFrame,
} from './frames.js';

/** Everything a run frame carries except `type`; `runId` defaults to a random UUID. */
export type RunRequest = Omit<RunFrame, 'type' | 'runId'> & { runId?: string };

/** A run's events, in `seq` order; the last one is its terminal frame. */
export type RunEvent = RunEventFrame;

/** How a run ended: the host's terminal frame, or a `failed{code:"host_lost"}` made by the client. */
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
  const idleTimeoutMs = options.idleTimeoutMs ?? 30_000;
  const pingIntervalMs = options.pingIntervalMs ?? Math.max(1, Math.floor(idleTimeoutMs / 3));
  const maxBufferedEvents = options.maxBufferedEvents ?? 4096;
  const now = options.now ?? (() => performance.now());
  const timers = options.timers ?? defaultTimers;
  const runs = new Map<string, ClientRun>();
  const pings = new Map<
    string,
    { sentAt: number; resolve: (ms: number) => void; reject: (e: Error) => void }
  >();
  let pingCounter = 0;
  let lastActivity = now();
  let bufferedEvents = 0;
  let paused = false;
  let closedFlag = false;
  let inputEnded = false;
  let welcomed = false;
  let timer: unknown;

  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  let resolveWelcome!: (frame: WelcomeFrame) => void;
  let rejectWelcome!: (error: Error) => void;
  const welcome = new Promise<WelcomeFrame>((resolve, reject) => {
    resolveWelcome = resolve;
    rejectWelcome = reject;
  });
  welcome.catch(() => {});

  const writer = new FrameWriter(options.output, {
    ...(options.maxFrameBytes !== undefined ? { maxFrameBytes: options.maxFrameBytes } : {}),
    onClose: () => lose('the channel to the host closed'),
  });

  function send(frame: object): void {
    if (!closedFlag) writer.write(frame);
  }

  function pending(): boolean {
    return !welcomed || runs.size > 0 || pings.size > 0;
  }

  function arm(): void {
    if (timer !== undefined || closedFlag || !pending()) return;
    timer = timers.setTimeout(tick, pingIntervalMs);
  }

  function tick(): void {
    timer = undefined;
    if (closedFlag || !pending()) return;
    const quiet = now() - lastActivity;
    if (paused) {
      lastActivity = now();
    } else if (quiet >= idleTimeoutMs) {
      lose(`no frame from the host for ${Math.round(quiet)} ms`);
      return;
    } else if (quiet >= pingIntervalMs && welcomed) {
      send({ type: 'ping', id: `idle-${(pingCounter += 1)}` });
    }
    arm();
  }

  function updateFlow(): void {
    if (!paused && bufferedEvents >= maxBufferedEvents) {
      paused = true;
      options.input.pause();
    } else if (paused && bufferedEvents <= maxBufferedEvents / 2) {
      paused = false;
      lastActivity = now();
      options.input.resume();
    }
  }

  function endRun(run: ClientRun, outcome: RunOutcome): void {
    if (run.end(outcome)) runs.delete(run.runId);
  }

  const buffer = {
    change(count: number): void {
      bufferedEvents += count;
      updateFlow();
    },
  };

  function lose(reason: string): void {
    if (closedFlag) return;
    closedFlag = true;
    timers.clearTimeout(timer);
    timer = undefined;
    detachInput();
    if (!welcomed) rejectWelcome(new RunnerHostError('ERR_HANDSHAKE', `no welcome: ${reason}`));
    for (const ping of pings.values())
      ping.reject(new RunnerHostError('ERR_CHANNEL_CLOSED', reason));
    pings.clear();
    for (const run of [...runs.values()]) {
      const failed: FailedFrame = {
        type: 'failed',
        runId: run.runId,
        seq: run.lastSeq + 1,
        error: { code: 'host_lost', message: `host lost: ${reason}`, retryable: true },
      };
      run.deliver(failed);
      endRun(run, failed);
    }
    if (paused) options.input.resume();
    void writer.end(true).finally(() => {
      // A host that went silent may never close its side: do not keep its stream open for it.
      if (!inputEnded) options.input.destroy();
      resolveClosed();
    });
  }

  function onHostFrame(frame: HostFrame): void {
    switch (frame.type) {
      case 'welcome':
        if (!welcomed) {
          welcomed = true;
          resolveWelcome(frame);
        }
        return;
      case 'fatal':
        if (!welcomed) {
          rejectWelcome(
            new RunnerHostError('ERR_HANDSHAKE', `host refused: ${frame.code}: ${frame.message}`),
          );
        }
        lose(`host sent fatal ${frame.code}: ${frame.message}`);
        return;
      case 'ping':
        send(frame.id !== undefined ? { type: 'pong', id: frame.id } : { type: 'pong' });
        return;
      case 'pong': {
        const id = frame.id === undefined ? undefined : String(frame.id);
        const ping = id === undefined ? undefined : pings.get(id);
        if (ping !== undefined && id !== undefined) {
          pings.delete(id);
          ping.resolve(now() - ping.sentAt);
        }
        return;
      }
      case 'log':
        options.onLog?.(frame);
        return;
      case 'bye':
        return;
      default: {
        const run = runs.get(frame.runId);
        if (run === undefined) return;
        run.deliver(frame);
        if (frame.type === 'question') run.answer(frame, send);
        else if (frame.type === 'question_resolved') run.questionResolved(frame.questionId);
        else if (frame.type === 'result' || frame.type === 'failed') endRun(run, frame);
      }
    }
  }

  const detachInput = readFrames(options.input, {
    ...(options.maxFrameBytes !== undefined ? { maxFrameBytes: options.maxFrameBytes } : {}),
    onFrame: (value) => {
      lastActivity = now();
      const parsed = parseHostFrame(value);
      if (parsed.kind === 'frame') onHostFrame(parsed.frame);
      else if (parsed.kind === 'invalid') {
        options.onProtocolError?.(`invalid ${JSON.stringify(parsed.type)} frame: ${parsed.issues}`);
      }
    },
    onError: (error) => {
      lastActivity = now();
      options.onProtocolError?.(`${error.code}: ${error.message}`);
    },
    onEnd: (reason, error) => {
      inputEnded = true;
      lose(
        reason === 'eof'
          ? 'the host closed the channel'
          : `read error: ${error?.message ?? 'unknown'}`,
      );
    },
  });

  send({
    type: 'hello',
    protocols: [...(options.protocols ?? SUPPORTED_PROTOCOLS)],
    capabilities: options.capabilities ?? { questions: true },
    ...(options.client !== undefined ? { client: options.client } : {}),
  });
  arm();

  function run(request: RunRequest, runOptions: RunOptions = {}): RunHandle {
    const runId = request.runId ?? randomUUID();
    const state = new ClientRun(runId, runOptions, buffer, options.onProtocolError);
    const handle = state.handle();
    if (runs.has(runId)) {
      throw new RunnerHostError(
        'ERR_DUPLICATE_RUN',
        `run ${runId} is already active on this client`,
      );
    }
    const cancelledLocally = (): ResultFrame => ({
      type: 'result',
      runId,
      seq: state.lastSeq + 1,
      stopReason: 'cancelled',
    });
    if (closedFlag) {
      endRun(state, {
        type: 'failed',
        runId,
        seq: 1,
        error: { code: 'host_lost', message: 'host lost: the channel is closed', retryable: true },
      });
      return handle;
    }
    runs.set(runId, state);
    const signal = runOptions.signal;
    if (signal !== undefined) {
      const onAbort = () => {
        if (state.ended) return;
        if (state.sent) send({ type: 'cancel', runId });
        else endRun(state, cancelledLocally());
      };
      if (signal.aborted) {
        endRun(state, cancelledLocally());
        return handle;
      }
      signal.addEventListener('abort', onAbort, { once: true });
      state.detachSignal = () => signal.removeEventListener('abort', onAbort);
    }
    void welcome.then(
      () => {
        if (state.ended || closedFlag) return;
        state.sent = true;
        const { runId: _ignored, ...rest } = request;
        send({ ...rest, type: 'run', runId });
        arm();
      },
      () => {},
    );
    arm();
    return handle;
  }

  return {
    welcome,
    closed,
    run,
    ping: () => {
      if (closedFlag)
        return Promise.reject(new RunnerHostError('ERR_CHANNEL_CLOSED', 'the channel is closed'));
      pingCounter += 1;
      const id = `p${pingCounter}`;
      return new Promise<number>((resolve, reject) => {
        pings.set(id, { sentAt: now(), resolve, reject });
        send({ type: 'ping', id });
        arm();
      });
    },
    shutdown: async () => {
      if (closedFlag) return;
      send({ type: 'shutdown' });
      await writer.flush();
      let handle: unknown;
      await Promise.race([
        closed,
        new Promise<void>((resolve) => {
          handle = timers.setTimeout(resolve, idleTimeoutMs);
        }),
      ]);
      timers.clearTimeout(handle);
      lose('client shut down');
      await closed;
    },
    close: () => lose('client closed'),
  };
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
