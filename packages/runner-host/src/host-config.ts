import type { RunnerEngine } from './engine.js';
import { RunnerHostError } from './errors.js';
import { MAX_FRAME_BYTES, type PeerInfo } from './frames.js';
import type { HostTimers, RunnerHostOptions } from './host.js';
import { nonNegative, timerDelay } from './host-limits.js';

const DEFAULT_HOST: PeerInfo = { name: '@packwarden/runner-host' };

const defaultTimers: HostTimers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** `RunnerHostOptions` checked, with every default applied (README "Embedding" option table). */
export interface HostConfig<TRuntime> {
  engineList: readonly RunnerEngine<TRuntime>[];
  engines: ReadonlyMap<string, RunnerEngine<TRuntime>>;
  defaultEngine: RunnerEngine<TRuntime>;
  cancelGraceMs: number;
  questionTimeoutMs: number;
  maxPendingQuestions: number;
  maxFrameBytes: number;
  highWaterBytes: number;
  maxBufferedOutputBytes: number;
  flushTimeoutMs: number;
  /** How long the session waits for a completed handshake; `undefined`: as long as it lives. */
  helloTimeoutMs: number | undefined;
  timers: HostTimers;
  hostInfo: PeerInfo;
}

/** Throws `ERR_INVALID_OPTIONS` (before anything starts) for no engine, a bad id or a bad number. */
export function resolveHostConfig<TRuntime>(
  options: RunnerHostOptions<TRuntime>,
): HostConfig<TRuntime> {
  const engineList = [
    ...(options.engine !== undefined ? [options.engine] : []),
    ...(options.engines ?? []),
  ];
  if (engineList.length === 0) {
    throw new RunnerHostError('ERR_INVALID_OPTIONS', 'startRunnerHost needs `engine` or `engines`');
  }
  const engines = new Map<string, RunnerEngine<TRuntime>>();
  for (const engine of engineList) {
    if (typeof engine.id !== 'string' || engine.id === '' || engines.has(engine.id)) {
      throw new RunnerHostError(
        'ERR_INVALID_OPTIONS',
        `engine ids must be unique non-empty strings (got ${JSON.stringify(engine.id)})`,
      );
    }
    engines.set(engine.id, engine);
  }
  return {
    engineList,
    engines,
    defaultEngine: engineList[0] as RunnerEngine<TRuntime>,
    cancelGraceMs: nonNegative(options.cancelGraceMs, 5000, 'cancelGraceMs'),
    questionTimeoutMs: nonNegative(options.questionTimeoutMs, 300_000, 'questionTimeoutMs'),
    maxPendingQuestions: nonNegative(options.maxPendingQuestions, 8, 'maxPendingQuestions'),
    maxFrameBytes: nonNegative(options.maxFrameBytes, MAX_FRAME_BYTES, 'maxFrameBytes'),
    highWaterBytes: nonNegative(options.outputHighWaterBytes, 1024 * 1024, 'outputHighWaterBytes'),
    maxBufferedOutputBytes: nonNegative(
      options.maxBufferedOutputBytes,
      32 * 1024 * 1024,
      'maxBufferedOutputBytes',
    ),
    flushTimeoutMs: nonNegative(options.flushTimeoutMs, 30_000, 'flushTimeoutMs'),
    helloTimeoutMs: timerDelay(options.helloTimeoutMs, 'helloTimeoutMs'),
    timers: options.timers ?? defaultTimers,
    hostInfo: options.host ?? DEFAULT_HOST,
  };
}
