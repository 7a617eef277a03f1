import type { RunnerEngine } from './engine.js';
import type { LogLevel } from './frames.js';
import type { KillRequest } from './host.js';
import { DeltaRedactor, StreamScrubber, type SecretSet } from './redactor.js';

/**
 * The state of the one run a host session runs at a time: its sequence numbers, how it is
 * stopping, its secret-scrubbing streams and when it finished. The session drives it.
 */
export class HostRun<TRuntime = unknown> {
  readonly controller = new AbortController();
  seq = 0;
  ended = false;
  stopping: KillRequest['reason'] | undefined = undefined;
  /** Set once the engine overran `maxBufferedOutputBytes`: its further output is discarded. */
  muted = false;
  graceTimer: unknown = undefined;
  readonly text: DeltaRedactor;
  readonly thinking: DeltaRedactor;
  /** The engine's `log` messages, a stream a driver may join like the deltas. */
  readonly logs: StreamScrubber;
  logLevel: LogLevel = 'info';
  /** Unpins the run's secrets (they stay remembered). */
  readonly releaseSecrets: () => void;
  /** Resolves once the run has its terminal frame. */
  readonly finished: Promise<void>;
  #markFinished!: () => void;

  constructor(
    readonly runId: string,
    readonly engine: RunnerEngine<TRuntime>,
    public nativeSessionId: string | undefined,
    secrets: SecretSet,
    runSecrets: readonly string[],
  ) {
    this.text = new DeltaRedactor(secrets);
    this.thinking = new DeltaRedactor(secrets);
    this.logs = new StreamScrubber(secrets);
    // Pinned, never evicted while the run lives, however many secrets other frames bring.
    this.releaseSecrets = secrets.pin(runSecrets);
    this.finished = new Promise<void>((resolve) => {
      this.#markFinished = resolve;
    });
  }

  markFinished(): void {
    this.#markFinished();
  }
}
