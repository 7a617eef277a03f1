import { randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import { FrameWriter, readFrames, type DecodeError, type InputBudget } from './codec.js';
import type { EngineEmitter, RunnerEngine } from './engine.js';
import { engineRunOptions } from './engine-options.js';
import { RunnerHostError } from './errors.js';
import { resolveHostConfig } from './host-config.js';
import {
  SUPPORTED_PROTOCOLS,
  parseDriverFrame,
  type Capabilities,
  type DriverFrame,
  type HelloFrame,
  type LogLevel,
  type PeerInfo,
  type RunFrame,
} from './frames.js';
import { HOST_LIMITS, capString, frameSecrets, splitDelta, toWireError } from './host-limits.js';
import { HostRun } from './host-run.js';
import { QuestionRegistry } from './question-registry.js';
import { RunIdMemory } from './run-ids.js';
import { createRunEmitter } from './run-emitter.js';
import { MAX_RUN_SECRETS, SecretSet } from './redactor.js';

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

const MAX_TEXT_FIELD = HOST_LIMITS.textFieldChars;

/**
 * Serves the runner-host protocol on one channel (stdio, or one accepted socket connection).
 * Never throws after start and never prints: problems become frames and logger entries.
 */
export function startRunnerHost<TRuntime>(options: RunnerHostOptions<TRuntime>): RunnerHost {
  const {
    engineList,
    engines,
    defaultEngine,
    cancelGraceMs,
    questionTimeoutMs,
    maxPendingQuestions,
    maxFrameBytes,
    highWaterBytes,
    maxBufferedOutputBytes,
    flushTimeoutMs,
    timers,
    hostInfo,
  } = resolveHostConfig(options);
  const secrets = options.secrets ?? new SecretSet();
  const hostSessionId = randomUUID();

  let state: 'awaiting_hello' | 'ready' | 'stopping' = 'awaiting_hello';
  let driverCapabilities: Capabilities = {};
  let currentNativeSessionId = options.nativeSessionId;
  let activeRun: HostRun | undefined;
  const runIds = new RunIdMemory();
  const maintenance = new Map<string, Promise<void>>();
  let resolveDone!: (exit: RunnerHostExit) => void;
  const done = new Promise<RunnerHostExit>((resolve) => {
    resolveDone = resolve;
  });

  const writer = new FrameWriter(options.output, {
    maxFrameBytes,
    highWaterBytes,
    ...(options.coalesceDeltas === false ? { maxCoalescedBytes: 0 } : {}),
    scrub: (json) => secrets.scrubJson(json),
    onClose: () => void stop('output_closed'),
  });

  function log(level: LogLevel, message: string, code?: string, runId?: string): void {
    const entry: RunnerHostLogEntry = {
      level,
      message: secrets.scrubText(capString(message, MAX_TEXT_FIELD)),
    };
    if (code !== undefined) entry.code = code;
    if (runId !== undefined) entry.runId = runId;
    try {
      options.logger?.(entry);
    } catch {
      // A broken logger must not take the session down.
    }
    // Logs are the one frame kind that may be dropped: a driver that floods the host with
    // garbage and does not read must not grow our memory.
    if (writer.bufferedBytes < highWaterBytes) writer.write({ type: 'log', ...entry });
  }

  function send(frame: object): void {
    try {
      writer.write(frame);
    } catch (error) {
      log('error', `dropped an outgoing frame: ${(error as Error).message}`, 'invalid_frame');
    }
  }

  // Held delta text is not released before other frames: a driver joins the `text` (and the
  // `thinking`) deltas of a run across whatever frames come between, so a secret split around a
  // tool or progress frame must still meet its other half here (README "Secrets").
  function runEvent(run: HostRun, frame: Record<string, unknown>): void {
    run.seq += 1;
    send({ ...frame, runId: run.runId, seq: run.seq });
  }

  function flushDeltas(run: HostRun): void {
    const text = run.text.flush();
    if (text !== '') queueDelta(run, 'text', text);
    const thinking = run.thinking.flush();
    if (thinking !== '') queueDelta(run, 'thinking', thinking);
  }

  function queueDelta(run: HostRun, type: 'text' | 'thinking', delta: string): void {
    for (const piece of splitDelta(delta)) {
      writer.writeDelta(type, run.runId, piece, () => {
        run.seq += 1;
        return { type, runId: run.runId, seq: run.seq, delta: '' };
      });
    }
  }

  function rejectRun(runId: string, code: string, message: string, retryable: boolean): void {
    send({ type: 'failed', runId, seq: 1, error: { code, message, retryable } });
  }

  function afterEmit(run: HostRun): Promise<void> {
    if (!run.ended && !run.muted && writer.bufferedBytes > maxBufferedOutputBytes) {
      run.muted = true;
      log(
        'error',
        `engine ${run.engine.id} ignored backpressure: over ${maxBufferedOutputBytes} bytes of output buffered; its further output is discarded`,
        'output_overflow',
        run.runId,
      );
      stopRun(run, 'output_overflow');
    }
    return writer.whenWritable();
  }

  const questionRegistry = new QuestionRegistry<HostRun>({
    timers,
    timeoutMs: questionTimeoutMs,
    maxPendingPerRun: maxPendingQuestions,
    driverAnswers: () => driverCapabilities.questions === true,
    emit: (run, frame) => runEvent(run, frame),
    log,
  });

  function makeEmitter(run: HostRun): EngineEmitter {
    return createRunEmitter(run, {
      runEvent,
      queueDelta,
      afterEmit,
      ask: (r, request) => questionRegistry.ask(r, request),
      log,
      sessionChanged: (nativeSessionId) => {
        currentNativeSessionId = nativeSessionId;
      },
    });
  }

  function finishRun(run: HostRun, terminal: Record<string, unknown>): void {
    if (run.ended) return;
    questionRegistry.cancelAll(run);
    if (!run.muted) {
      // The streams end here: what was held as a possible secret prefix did not become one.
      flushDeltas(run);
      const logTail = run.logs.flush();
      if (logTail !== '') log(run.logLevel, logTail, undefined, run.runId);
    }
    runEvent(run, {
      ...terminal,
      ...(run.nativeSessionId !== undefined ? { nativeSessionId: run.nativeSessionId } : {}),
    });
    run.ended = true;
    run.releaseSecrets();
    timers.clearTimeout(run.graceTimer);
    if (activeRun === run) activeRun = undefined;
    run.markFinished();
    const engine = run.engine;
    if (engine.onMaintenance !== undefined && state !== 'stopping') {
      const task = Promise.resolve()
        .then(() =>
          engine.onMaintenance?.({ reason: 'after_run', runId: run.runId }, options.runtime),
        )
        .catch((error: unknown) =>
          log(
            'warn',
            `maintenance of engine ${engine.id} failed: ${toWireError(error).message}`,
            'engine_error',
          ),
        )
        .finally(() => {
          if (maintenance.get(engine.id) === task) maintenance.delete(engine.id);
        });
      maintenance.set(engine.id, task);
    }
  }

  function stopRun(run: HostRun, reason: KillRequest['reason']): void {
    if (run.ended || run.stopping !== undefined) return;
    run.stopping = reason;
    run.controller.abort(new RunnerHostError('ERR_RUN_ENDED', `run ${reason}`));
    questionRegistry.cancelAll(run);
    run.graceTimer = timers.setTimeout(() => {
      if (run.ended) return;
      const request: KillRequest = { runId: run.runId, engineId: run.engine.id, reason };
      Promise.resolve()
        .then(() => options.kill?.(request))
        .catch((error: unknown) =>
          log('warn', `kill hook failed: ${toWireError(error).message}`, 'engine_error', run.runId),
        );
      log(
        'warn',
        `engine ${run.engine.id} ignored its abort signal for ${cancelGraceMs} ms`,
        undefined,
        run.runId,
      );
      finishStopped(run);
    }, cancelGraceMs);
  }

  function finishStopped(run: HostRun): void {
    if (run.stopping === 'output_overflow') {
      finishRun(run, {
        type: 'failed',
        error: {
          code: 'output_overflow',
          message: 'the engine produced output faster than the driver read it, without waiting',
          retryable: false,
        },
      });
    } else {
      finishRun(run, { type: 'result', stopReason: 'cancelled' });
    }
  }

  /**
   * Learns the secrets of a `run` frame that will not run (rejected, invalid): remembered, not
   * pinned. A frame over the limit only gets its two named secrets learned; it is refused
   * before anything could echo the rest.
   */
  function rememberFrameSecrets(frame: Record<string, unknown>): void {
    const values = frameSecrets(frame);
    const named = [frame.modelToken, frame.gatewaySessionKey];
    for (const value of values.length > MAX_RUN_SECRETS ? named : values) {
      if (typeof value === 'string') secrets.add(value);
    }
  }

  function handleRun(frame: RunFrame): void {
    const runSecrets = frameSecrets(frame);
    if (runSecrets.length > MAX_RUN_SECRETS) {
      rememberFrameSecrets(frame);
      if (runIds.has(frame.runId)) return;
      runIds.remember(frame.runId);
      rejectRun(
        frame.runId,
        'too_many_secrets',
        `the run carries ${runSecrets.length} secret values (modelToken, gatewaySessionKey, turnEnv); at most ${MAX_RUN_SECRETS} are accepted`,
        false,
      );
      return;
    }
    if (state === 'awaiting_hello' || runIds.has(frame.runId) || activeRun !== undefined) {
      // Learned before anything else so that even a rejection cannot echo them.
      rememberFrameSecrets(frame);
    }
    if (state === 'awaiting_hello') {
      rejectRun(frame.runId, 'not_initialized', 'send "hello" before "run"', false);
      return;
    }
    if (runIds.has(frame.runId)) {
      log(
        'warn',
        `runId ${frame.runId} was already used; frame ignored`,
        'duplicate_run',
        frame.runId,
      );
      return;
    }
    if (activeRun !== undefined) {
      runIds.remember(frame.runId);
      rejectRun(
        frame.runId,
        'busy',
        `run ${activeRun.runId} is still active in this session`,
        true,
      );
      return;
    }
    const engine = frame.engineId === undefined ? defaultEngine : engines.get(frame.engineId);
    if (engine === undefined) {
      rememberFrameSecrets(frame);
      runIds.remember(frame.runId);
      rejectRun(
        frame.runId,
        'unknown_engine',
        `no engine ${JSON.stringify(frame.engineId)}; available: ${[...engines.keys()].join(', ')}`,
        false,
      );
      return;
    }
    runIds.remember(frame.runId);
    const run = new HostRun(
      frame.runId,
      engine as RunnerEngine<unknown>,
      frame.nativeSessionId ?? currentNativeSessionId,
      secrets,
      runSecrets,
    );
    activeRun = run;
    runEvent(run, { type: 'accepted', engineId: engine.id });
    const runOptions = engineRunOptions(frame, engine.id, hostSessionId, currentNativeSessionId);
    const emitter = makeEmitter(run);
    const pendingMaintenance = maintenance.get(engine.id) ?? Promise.resolve();
    void pendingMaintenance
      .then(() => {
        if (run.stopping !== undefined) return;
        return engine.stream(
          frame.message,
          runOptions,
          emitter,
          options.runtime,
          run.controller.signal,
        );
      })
      .then(
        () => {
          if (run.stopping !== undefined) finishStopped(run);
          else finishRun(run, { type: 'result', stopReason: 'end_turn' });
        },
        (error: unknown) => {
          if (run.stopping !== undefined) finishStopped(run);
          else finishRun(run, { type: 'failed', error: toWireError(error) });
        },
      );
  }

  function handleHello(frame: HelloFrame): void {
    if (state !== 'awaiting_hello') {
      log('warn', 'already initialized; extra "hello" ignored', 'already_initialized');
      return;
    }
    const common = SUPPORTED_PROTOCOLS.filter((v) => frame.protocols.includes(v));
    if (common.length === 0) {
      send({
        type: 'fatal',
        code: 'unsupported_protocol',
        message: `no common protocol version: host speaks ${SUPPORTED_PROTOCOLS.join(', ')}, driver offered ${frame.protocols.join(', ') || 'none'}`,
      });
      void stop('fatal');
      return;
    }
    state = 'ready';
    driverCapabilities = frame.capabilities ?? {};
    send({
      type: 'welcome',
      protocol: Math.max(...common),
      host: hostInfo,
      engines: engineList.map((e) => ({ id: e.id, displayName: e.displayName })),
      capabilities: { questions: true },
    });
  }

  function dispatch(frame: DriverFrame): void {
    switch (frame.type) {
      case 'hello':
        return handleHello(frame);
      case 'run':
        return handleRun(frame);
      case 'ping':
        return send(frame.id !== undefined ? { type: 'pong', id: frame.id } : { type: 'pong' });
      case 'pong':
        return;
      case 'shutdown':
      case 'fatal':
        void stop('shutdown');
        return;
      case 'cancel':
        if (state === 'awaiting_hello') {
          log('warn', 'send "hello" first; frame ignored', 'not_initialized', frame.runId);
        } else if (activeRun?.runId === frame.runId) {
          stopRun(activeRun, 'cancel');
        } else if (!runIds.has(frame.runId)) {
          log('warn', `no run ${frame.runId}; cancel ignored`, 'unknown_run', frame.runId);
        }
        return;
      case 'answer':
        if (state === 'awaiting_hello') {
          log('warn', 'send "hello" first; frame ignored', 'not_initialized');
          return;
        }
        return questionRegistry.answer(frame);
    }
  }

  function onFrame(value: Record<string, unknown>): void {
    if (state === 'stopping') return;
    const parsed = parseDriverFrame(value);
    if (parsed.kind === 'unknown') return;
    if (parsed.kind === 'invalid') {
      const runId = typeof value.runId === 'string' ? value.runId.slice(0, 256) : undefined;
      if (parsed.type === 'run' && runId !== undefined && runId !== '' && !runIds.has(runId)) {
        rememberFrameSecrets(value);
        runIds.remember(runId);
        rejectRun(runId, 'invalid_frame', `invalid "run" frame: ${parsed.issues}`, false);
      } else {
        log(
          'warn',
          `invalid ${JSON.stringify(parsed.type)} frame ignored: ${parsed.issues}`,
          'invalid_frame',
        );
      }
      return;
    }
    dispatch(parsed.frame);
    throttleInput();
  }

  // A driver that keeps sending (pings, runs to reject, garbage) but does not read what we send
  // would grow the output queue without end: past the hard cap, stop reading it until it reads.
  let inputPaused = false;
  function throttleInput(): void {
    if (inputPaused || writer.bufferedBytes <= maxBufferedOutputBytes) return;
    inputPaused = true;
    options.input.pause();
    void writer.whenWritable().then(() => {
      inputPaused = false;
      if (state !== 'stopping') options.input.resume();
    });
  }

  function onDecodeError(error: DecodeError): void {
    log('warn', error.message, error.code);
    throttleInput();
  }

  const detachInput = readFrames(options.input, {
    maxFrameBytes,
    ...(options.inputBudget !== undefined ? { budget: options.inputBudget } : {}),
    onFrame,
    onError: onDecodeError,
    onEnd: (reason) => void stop(reason === 'eof' ? 'eof' : 'input_error'),
  });

  let stopping: Promise<void> | undefined;
  function stop(reason: RunnerHostExit['reason']): Promise<void> {
    stopping ??= (async () => {
      state = 'stopping';
      detachInput();
      const run = activeRun;
      if (run !== undefined) {
        stopRun(run, 'shutdown');
        await run.finished;
      }
      await Promise.allSettled(maintenance.values());
      if (reason === 'shutdown' || reason === 'eof') send({ type: 'bye' });
      let disposeTimer: unknown;
      await Promise.race([
        Promise.allSettled(
          engineList.map((engine) =>
            Promise.resolve()
              // This session's engine state goes first; the engine itself only when this host
              // owns it (README "Engine lifetime": a shared engine outlives one session).
              .then(() => engine.endSession?.(hostSessionId, options.runtime))
              .then(() => (options.disposeEngines === false ? undefined : engine.dispose?.()))
              .catch((error: unknown) =>
                log('warn', `dispose of engine ${engine.id} failed: ${toWireError(error).message}`),
              ),
          ),
        ),
        new Promise<void>((resolve) => {
          disposeTimer = timers.setTimeout(resolve, cancelGraceMs);
        }),
      ]);
      timers.clearTimeout(disposeTimer);
      // A driver that stopped reading for good must not keep the host alive: flushing is bounded.
      let flushTimer: unknown;
      const flushed = await Promise.race([
        writer.end(options.endOutput ?? true).then(() => true),
        new Promise<boolean>((resolve) => {
          flushTimer = timers.setTimeout(() => resolve(false), flushTimeoutMs);
        }),
      ]);
      timers.clearTimeout(flushTimer);
      if (!flushed && (options.endOutput ?? true)) options.output.destroy();
      resolveDone({ reason });
    })();
    return stopping;
  }

  return { done };
}
