import type { RunnerEngine } from './engine.js';
import type { LogLevel } from './frames.js';
import type { HostTimers } from './host.js';
import { toWireError } from './host-limits.js';

export interface EngineLifecycleOptions<TRuntime> {
  /** Handed to `onMaintenance` and `endSession`. */
  runtime: TRuntime;
  hostSessionId: string;
  /** Call `dispose` too when the session ends (`false` for engines shared between sessions). */
  disposeEngines: boolean;
  /** The longest wait for `endSession` and `dispose` together. */
  graceMs: number;
  timers: HostTimers;
  log: (level: LogLevel, message: string, code?: string) => void;
}

/**
 * The engines' life around the runs of one session (README "Engine lifetime"): maintenance after
 * each run, which the engine's next run waits for; and, when the session ends, `endSession` and
 * (for engines this session owns) `dispose`, within a bounded time. Failures are logged only.
 */
export class EngineLifecycle<TRuntime> {
  readonly #engines: readonly RunnerEngine<TRuntime>[];
  readonly #options: EngineLifecycleOptions<TRuntime>;
  readonly #maintenance = new Map<string, Promise<void>>();
  #ending = false;

  constructor(
    engines: readonly RunnerEngine<TRuntime>[],
    options: EngineLifecycleOptions<TRuntime>,
  ) {
    this.#engines = engines;
    this.#options = options;
  }

  /** A run of `engine` has its terminal frame: start its maintenance (unless the session ends). */
  afterRun(engine: RunnerEngine<TRuntime>, runId: string): void {
    if (engine.onMaintenance === undefined || this.#ending) return;
    const { runtime, log } = this.#options;
    const task = Promise.resolve()
      .then(() => engine.onMaintenance?.({ reason: 'after_run', runId }, runtime))
      .catch((error: unknown) =>
        log(
          'warn',
          `maintenance of engine ${engine.id} failed: ${toWireError(error).message}`,
          'engine_error',
        ),
      )
      .finally(() => {
        if (this.#maintenance.get(engine.id) === task) this.#maintenance.delete(engine.id);
      });
    this.#maintenance.set(engine.id, task);
  }

  /** Resolves once the engine's maintenance (if any is running) has settled. */
  ready(engineId: string): Promise<void> {
    return this.#maintenance.get(engineId) ?? Promise.resolve();
  }

  /** The session is ending: runs that end from now on get no maintenance. */
  stopMaintenance(): void {
    this.#ending = true;
  }

  /** Resolves once every maintenance that was started has settled. */
  async settled(): Promise<void> {
    await Promise.allSettled(this.#maintenance.values());
  }

  /**
   * Ends the session for every engine: `endSession` first, then `dispose` when this host owns
   * the engines (a shared engine outlives one session). Resolves after `graceMs` at the latest.
   */
  async end(): Promise<void> {
    const { runtime, hostSessionId, disposeEngines, graceMs, timers, log } = this.#options;
    let graceTimer: unknown;
    await Promise.race([
      Promise.allSettled(
        this.#engines.map((engine) =>
          Promise.resolve()
            .then(() => engine.endSession?.(hostSessionId, runtime))
            .then(() => (disposeEngines ? engine.dispose?.() : undefined))
            .catch((error: unknown) =>
              log('warn', `dispose of engine ${engine.id} failed: ${toWireError(error).message}`),
            ),
        ),
      ),
      new Promise<void>((resolve) => {
        graceTimer = timers.setTimeout(resolve, graceMs);
      }),
    ]);
    timers.clearTimeout(graceTimer);
  }
}
