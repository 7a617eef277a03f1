import type { EngineEmitter, RunnerEngine } from './engine.js';
import type { EngineLifecycle } from './engine-lifecycle.js';
import { engineRunOptions } from './engine-options.js';
import { RunnerHostError } from './errors.js';
import type { AnswerFrame, RunFrame, WireError } from './frames.js';
import type { HostTimers, KillRequest } from './host.js';
import { toWireError } from './host-limits.js';
import { HostRun } from './host-run.js';
import type { HostTransport } from './host-transport.js';
import { QuestionRegistry } from './question-registry.js';
import type { SecretSet } from './redactor.js';
import { createRunEmitter } from './run-emitter.js';

export interface RunSupervisorOptions<TRuntime> {
  transport: HostTransport;
  engines: EngineLifecycle<TRuntime>;
  secrets: SecretSet;
  runtime: TRuntime;
  hostSessionId: string;
  /** The session's resumable engine session id until an engine reports one. */
  nativeSessionId: string | undefined;
  /** Whether the driver answers questions (read at each question). */
  driverAnswers: () => boolean;
  timers: HostTimers;
  cancelGraceMs: number;
  kill: ((request: KillRequest) => void | Promise<void>) | undefined;
  questionTimeoutMs: number;
  maxPendingQuestions: number;
  maxBufferedOutputBytes: number;
}

/** How a run ended, before the supervisor numbers it and adds the session id. */
type Terminal =
  { type: 'result'; stopReason: 'end_turn' | 'cancelled' } | { type: 'failed'; error: WireError };

/**
 * Takes an admitted run from `accepted` to its one terminal frame (README "Rules in detail"):
 * streams the engine after its maintenance, stops it on cancel, shutdown or output overflow
 * (with the `kill` hook after the grace period), and resolves its questions.
 */
export class RunSupervisor<TRuntime> {
  readonly #options: RunSupervisorOptions<TRuntime>;
  readonly #questions: QuestionRegistry<HostRun<TRuntime>>;
  #active: HostRun<TRuntime> | undefined;
  #nativeSessionId: string | undefined;

  constructor(options: RunSupervisorOptions<TRuntime>) {
    this.#options = options;
    this.#nativeSessionId = options.nativeSessionId;
    const { transport } = options;
    this.#questions = new QuestionRegistry<HostRun<TRuntime>>({
      timers: options.timers,
      timeoutMs: options.questionTimeoutMs,
      maxPendingPerRun: options.maxPendingQuestions,
      driverAnswers: options.driverAnswers,
      emit: (run, frame) => transport.sendRunEvent(run, frame),
      log: transport.log,
    });
  }

  /** The id of the run still active, if any. */
  get activeRunId(): string | undefined {
    return this.#active?.runId;
  }

  start(frame: RunFrame, engine: RunnerEngine<TRuntime>, runSecrets: readonly string[]): void {
    const { transport, engines, runtime, hostSessionId, secrets } = this.#options;
    const run = new HostRun(
      frame.runId,
      engine,
      frame.nativeSessionId ?? this.#nativeSessionId,
      secrets,
      runSecrets,
    );
    this.#active = run;
    transport.sendRunEvent(run, { type: 'accepted', engineId: engine.id });
    const runOptions = engineRunOptions(frame, engine.id, hostSessionId, this.#nativeSessionId);
    const emitter = this.#emitter(run);
    void engines
      .ready(engine.id)
      .then(() => {
        if (run.stopping !== undefined) return;
        return engine.stream(frame.message, runOptions, emitter, runtime, run.controller.signal);
      })
      .then(
        () => this.#settle(run, { type: 'result', stopReason: 'end_turn' }),
        (error: unknown) => this.#settle(run, { type: 'failed', error: toWireError(error) }),
      );
  }

  /** Cancels the active run if it is `runId`; returns whether it was. */
  cancel(runId: string): boolean {
    const run = this.#active;
    if (run?.runId !== runId) return false;
    this.#stop(run, 'cancel');
    return true;
  }

  answer(frame: AnswerFrame): void {
    this.#questions.answer(frame);
  }

  /** Stops the active run (if any) for a shutdown; resolves once it has its terminal frame. */
  async stopActive(): Promise<void> {
    const run = this.#active;
    if (run === undefined) return;
    this.#stop(run, 'shutdown');
    await run.finished;
  }

  #emitter(run: HostRun<TRuntime>): EngineEmitter {
    const { transport } = this.#options;
    return createRunEmitter(run, {
      runEvent: (r, frame) => transport.sendRunEvent(r, frame),
      queueDelta: (r, type, delta) => transport.sendDelta(r, type, delta),
      afterEmit: (r) => this.#afterEmit(r),
      ask: (r, request) => this.#questions.ask(r, request),
      log: transport.log,
      sessionChanged: (nativeSessionId) => {
        this.#nativeSessionId = nativeSessionId;
      },
    });
  }

  /** Backpressure for the engine, and the end of an engine that does not wait for it. */
  #afterEmit(run: HostRun<TRuntime>): Promise<void> {
    const { transport, maxBufferedOutputBytes } = this.#options;
    if (!run.ended && !run.muted && transport.bufferedBytes > maxBufferedOutputBytes) {
      run.muted = true;
      transport.log(
        'error',
        `engine ${run.engine.id} ignored backpressure: over ${maxBufferedOutputBytes} bytes of output buffered; its further output is discarded`,
        'output_overflow',
        run.runId,
      );
      this.#stop(run, 'output_overflow');
    }
    return transport.whenWritable();
  }

  /** The engine settled: a run that was being stopped ends as its stop reason says. */
  #settle(run: HostRun<TRuntime>, terminal: Terminal): void {
    if (run.stopping !== undefined) this.#finishStopped(run);
    else this.#finish(run, terminal);
  }

  #stop(run: HostRun<TRuntime>, reason: KillRequest['reason']): void {
    if (run.ended || run.stopping !== undefined) return;
    const { timers, cancelGraceMs, transport, kill } = this.#options;
    run.stopping = reason;
    run.controller.abort(new RunnerHostError('ERR_RUN_ENDED', `run ${reason}`));
    this.#questions.cancelAll(run);
    run.graceTimer = timers.setTimeout(() => {
      if (run.ended) return;
      const request: KillRequest = { runId: run.runId, engineId: run.engine.id, reason };
      Promise.resolve()
        .then(() => kill?.(request))
        .catch((error: unknown) =>
          transport.log(
            'warn',
            `kill hook failed: ${toWireError(error).message}`,
            'engine_error',
            run.runId,
          ),
        );
      transport.log(
        'warn',
        `engine ${run.engine.id} ignored its abort signal for ${cancelGraceMs} ms`,
        undefined,
        run.runId,
      );
      this.#finishStopped(run);
    }, cancelGraceMs);
  }

  #finishStopped(run: HostRun<TRuntime>): void {
    if (run.stopping === 'output_overflow') {
      this.#finish(run, {
        type: 'failed',
        error: {
          code: 'output_overflow',
          message: 'the engine produced output faster than the driver read it, without waiting',
          retryable: false,
        },
      });
    } else {
      this.#finish(run, { type: 'result', stopReason: 'cancelled' });
    }
  }

  #finish(run: HostRun<TRuntime>, terminal: Terminal): void {
    if (run.ended) return;
    const { transport, timers, engines } = this.#options;
    this.#questions.cancelAll(run);
    if (!run.muted) {
      // The streams end here: what was held as a possible secret prefix did not become one.
      // Held text was not released before other frames (README "Secrets split across writes").
      const text = run.text.flush();
      if (text !== '') transport.sendDelta(run, 'text', text);
      const thinking = run.thinking.flush();
      if (thinking !== '') transport.sendDelta(run, 'thinking', thinking);
      const logTail = run.logs.flush();
      if (logTail !== '') transport.log(run.logLevel, logTail, undefined, run.runId);
    }
    transport.sendRunEvent(run, {
      ...terminal,
      ...(run.nativeSessionId !== undefined ? { nativeSessionId: run.nativeSessionId } : {}),
    });
    run.ended = true;
    run.releaseSecrets();
    timers.clearTimeout(run.graceTimer);
    if (this.#active === run) this.#active = undefined;
    run.markFinished();
    engines.afterRun(run.engine, run.runId);
  }
}
