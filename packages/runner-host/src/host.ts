import { randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import type { InputBudget } from './codec.js';
import type { RunnerEngine } from './engine.js';
import { EngineLifecycle } from './engine-lifecycle.js';
import type { LogLevel, PeerInfo } from './frames.js';
import { resolveHostConfig } from './host-config.js';
import { HostDispatcher } from './host-dispatch.js';
import { HostHandshake } from './host-handshake.js';
import { HostTransport } from './host-transport.js';
import { SecretSet } from './redactor.js';
import { RunAdmission } from './run-admission.js';
import { RunSupervisor } from './run-supervisor.js';

/** A diagnostic from the host, already scrubbed of secrets. */
export interface RunnerHostLogEntry {
  level: LogLevel;
  message: string;
  code?: string;
  runId?: string;
}

/** Passed to the `kill` hook when an engine ignored its abort signal for the whole grace period. */
export interface KillRequest {
  runId: string;
  engineId: string;
  reason: 'cancel' | 'shutdown' | 'output_overflow';
}

/** The timer functions the host uses (inject fake or unref'd timers here). */
export interface HostTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface RunnerHostOptions<TRuntime = unknown> {
  /** The engine, or use `engines` for several (the first is the default for runs without `engineId`). */
  engine?: RunnerEngine<TRuntime>;
  engines?: readonly RunnerEngine<TRuntime>[];
  /** Handed to every engine call as is (the embedder's state dirs, clients, …). */
  runtime: TRuntime;
  /** Frames from the driver. */
  input: Readable;
  /** Frames to the driver. */
  output: Writable;
  /** The session's resumable engine session id, until an engine reports a new one. */
  nativeSessionId?: string;
  /** Reported in `welcome.host`. Default `{ name: "@packwarden/runner-host" }`. */
  host?: PeerInfo;
  /** How long a cancelled engine may take to settle before `kill` is called. Default 5000 ms. */
  cancelGraceMs?: number;
  /** Called after the grace period for an engine that has not settled (kill its process group). */
  kill?: (request: KillRequest) => void | Promise<void>;
  /** Longest time a question waits for its answer. Default 300000 ms. */
  questionTimeoutMs?: number;
  /** Questions that may wait at once per run; more are declined. Default 8. */
  maxPendingQuestions?: number;
  /** Frame size cap in both directions. Default 16 MiB. */
  maxFrameBytes?: number;
  /** Output bytes buffered above which emitter promises wait for the driver. Default 1 MiB. */
  outputHighWaterBytes?: number;
  /** Output bytes buffered above which a run whose engine ignores backpressure fails. Default 32 MiB. */
  maxBufferedOutputBytes?: number;
  /**
   * Merge consecutive unsent text/thinking deltas of a run into one frame. Default `true`; with
   * `false` every delta is its own frame (memory stays bounded by the emitter's backpressure).
   */
  coalesceDeltas?: boolean;
  /** End `output` when the host stops (set `false` for `process.stdout`). Default `true`. */
  endOutput?: boolean;
  /**
   * How long stopping waits for the driver to read what is left before `done` resolves anyway
   * (and `output` is destroyed when `endOutput`). Default 30000 ms.
   */
  flushTimeoutMs?: number;
  /**
   * How long the session waits for the driver's `hello` (a complete line, answered by `welcome`)
   * before it sends `fatal{code:"hello_timeout"}` and stops. Default: no limit, since a stdio
   * host has one driver, which owns the process and can end it; `serveRunnerSocket` sets it
   * for every connection (its own option `helloTimeoutMs`, default 10000 ms). From 1 to
   * 2147483647 ms.
   */
  helloTimeoutMs?: number;
  /** Receives the host's diagnostics (also sent as `log` frames), scrubbed of secrets. */
  logger?: (entry: RunnerHostLogEntry) => void;
  timers?: HostTimers;
  /**
   * Where the host learns the secrets of each run (pinned while the run lives, see the README's
   * "Secrets"). Share one set with whatever else must scrub them (the process's stderr); by
   * default each host has its own.
   */
  secrets?: SecretSet;
  /**
   * Memory for partial input frames shared with other hosts (the connections of one socket
   * server): a frame that does not fit is skipped with `log{code:"input_budget_exceeded"}`.
   */
  inputBudget?: InputBudget;
  /**
   * Call each engine's `dispose` when this host stops. Default `true`; `false` when the engines
   * are shared with other sessions (`serveRunnerSocket` disposes them once, when it closes).
   * `endSession` is called either way.
   */
  disposeEngines?: boolean;
}

/** How a host stopped. */
export interface RunnerHostExit {
  reason: 'shutdown' | 'eof' | 'fatal' | 'output_closed' | 'input_error';
}

export interface RunnerHost {
  /** Resolves once every run has its terminal frame, output is flushed and engines are disposed. */
  done: Promise<RunnerHostExit>;
}

/**
 * Serves the runner-host protocol on one channel (stdio, or one accepted socket connection).
 * Never throws after start and never prints: problems become frames and logger entries.
 */
export function startRunnerHost<TRuntime>(options: RunnerHostOptions<TRuntime>): RunnerHost {
  // The session is built from its units: the transport (frames in and out), the handshake, run
  // admission, the run supervisor, the engines' lifecycle and the dispatcher between them.
  const config = resolveHostConfig(options);
  const { timers, cancelGraceMs } = config;
  const secrets = options.secrets ?? new SecretSet();
  const hostSessionId = randomUUID();
  const endOutput = options.endOutput ?? true;
  let resolveDone!: (exit: RunnerHostExit) => void;
  const done = new Promise<RunnerHostExit>((resolve) => (resolveDone = resolve));
  let stopping: Promise<void> | undefined;
  const stop = (reason: RunnerHostExit['reason']): void => {
    stopping ??= shutDown(reason).then(() => resolveDone({ reason }));
  };

  const handshake = new HostHandshake(config.engineList, config.hostInfo);
  const transport = new HostTransport(options.input, options.output, {
    ...config,
    secrets,
    logger: options.logger,
    inputBudget: options.inputBudget,
    ...(options.coalesceDeltas !== undefined ? { coalesceDeltas: options.coalesceDeltas } : {}),
    onOutputClosed: () => stop('output_closed'),
  });
  const engines = new EngineLifecycle(config.engineList, {
    runtime: options.runtime,
    hostSessionId,
    disposeEngines: options.disposeEngines !== false,
    graceMs: cancelGraceMs,
    timers,
    log: transport.log,
  });
  const runs = new RunSupervisor({
    ...config,
    transport,
    engines,
    secrets,
    runtime: options.runtime,
    hostSessionId,
    nativeSessionId: options.nativeSessionId,
    driverAnswers: () => handshake.driverAnswersQuestions,
    kill: options.kill,
  });
  const admission = new RunAdmission(secrets, config.engines, config.defaultEngine);
  const dispatcher = new HostDispatcher({ handshake, admission, runs, transport, stop });
  transport.read({ onFrame: dispatcher.onFrame, onEnd: stop });
  if (config.helloTimeoutMs !== undefined) {
    handshake.expectHelloWithin(config.helloTimeoutMs, timers, (fatal) => {
      transport.report('warn', fatal.message, fatal.code);
      transport.send(fatal);
      stop('fatal');
    });
  }

  // README "Rules in detail", Ending: every run gets its terminal frame, then `bye`, the engines
  // (this session's state, and the engines themselves when this host owns them), the output.
  async function shutDown(reason: RunnerHostExit['reason']): Promise<void> {
    handshake.stop();
    transport.stopReading();
    engines.stopMaintenance();
    await runs.stopActive();
    await engines.settled();
    if (reason === 'shutdown' || reason === 'eof') transport.send({ type: 'bye' });
    await engines.end();
    await transport.close(endOutput);
  }

  return { done };
}
