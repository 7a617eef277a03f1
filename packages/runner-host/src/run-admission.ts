import type { RunnerEngine } from './engine.js';
import { isWireId, type RunFrame, type WireError } from './frames.js';
import { HOST_LIMITS } from './host-limits.js';
import { MAX_RUN_SECRETS, type SecretSet } from './redactor.js';
import { RunIdMemory } from './run-ids.js';
import {
  RUN_SECRET_MAP_FIELDS,
  RUN_SECRET_VALUE_FIELDS,
  namedRunSecrets,
  runSecretValues,
} from './run-secrets.js';

/** What the session is doing when a `run` frame arrives. */
export interface AdmissionContext {
  /** Whether `hello` was answered with `welcome`. */
  initialized: boolean;
  /** The run still active in this session, if any. */
  activeRunId: string | undefined;
}

/** The verdict on a `run` frame. */
export type Admission<TRuntime> =
  /** Start it: `runSecrets` are pinned for its lifetime. */
  | { kind: 'start'; engine: RunnerEngine<TRuntime>; runSecrets: string[] }
  /** Refuse it with a single `failed` frame (`seq: 1`, no `accepted`). */
  | { kind: 'reject'; error: WireError }
  /** Drop it: its id was used already (`warning` says why when the driver should hear of it). */
  | { kind: 'ignore'; warning?: { code: string; message: string } };

/** The verdict on a `run` frame that failed validation. */
export type InvalidRunVerdict =
  /** Refuse it with one `failed{code:"invalid_frame"}` (`seq: 1`) under this id. */
  | { kind: 'refuse'; runId: string }
  /** Only log it (`invalid_frame`); `runId`, when given, is the frame's id exactly as sent. */
  | { kind: 'log'; runId?: string };

/**
 * Decides which `run` frames a session runs (README "Rules in detail", Admission and Secrets):
 * one active run at a time, a known engine, an id never used before in the session, at most
 * `MAX_RUN_SECRETS` secret values. Before any verdict that sends something, it has learned the
 * frame's secrets, so that not even a refusal can echo one.
 */
export class RunAdmission<TRuntime> {
  readonly #secrets: SecretSet;
  readonly #engines: ReadonlyMap<string, RunnerEngine<TRuntime>>;
  readonly #defaultEngine: RunnerEngine<TRuntime>;
  readonly #runIds = new RunIdMemory();

  constructor(
    secrets: SecretSet,
    engines: ReadonlyMap<string, RunnerEngine<TRuntime>>,
    defaultEngine: RunnerEngine<TRuntime>,
  ) {
    this.#secrets = secrets;
    this.#engines = engines;
    this.#defaultEngine = defaultEngine;
  }

  /** Whether the session has seen `runId` (run, refused or invalid). */
  seen(runId: string): boolean {
    return this.#runIds.has(runId);
  }

  admit(frame: RunFrame, context: AdmissionContext): Admission<TRuntime> {
    const runSecrets = runSecretValues(frame);
    const { runId } = frame;
    if (runSecrets.length > MAX_RUN_SECRETS) {
      this.#rememberSecrets(frame);
      if (this.seen(runId)) return { kind: 'ignore' };
      return this.#reject(
        runId,
        'too_many_secrets',
        `the run carries ${runSecrets.length} secret values (${SECRET_FIELD_NAMES}); at most ${MAX_RUN_SECRETS} are accepted`,
      );
    }
    if (!context.initialized || this.seen(runId) || context.activeRunId !== undefined) {
      // Learned before anything else so that even a rejection cannot echo them.
      this.#rememberSecrets(frame);
    }
    if (!context.initialized) {
      // Not remembered: the same id may run once the driver has said hello.
      return { kind: 'reject', error: refusal('not_initialized', 'send "hello" before "run"') };
    }
    if (this.seen(runId)) {
      const message = `runId ${runId} was already used; frame ignored`;
      return { kind: 'ignore', warning: { code: 'duplicate_run', message } };
    }
    if (context.activeRunId !== undefined) {
      const message = `run ${context.activeRunId} is still active in this session`;
      return this.#reject(runId, 'busy', message, true);
    }
    const engine =
      frame.engineId === undefined ? this.#defaultEngine : this.#engines.get(frame.engineId);
    if (engine === undefined) {
      this.#rememberSecrets(frame);
      return this.#reject(
        runId,
        'unknown_engine',
        `no engine ${JSON.stringify(frame.engineId)}; available: ${[...this.#engines.keys()].join(', ')}`,
      );
    }
    this.#runIds.remember(runId);
    return { kind: 'start', engine, runSecrets };
  }

  /**
   * A `run` frame that failed validation: refused under its id when that is a valid id not seen
   * before, else only logged. An id no run frame can carry (empty, over `MAX_ID_CHARS`) is never
   * cut to fit: a `failed` for an id the driver did not send settles nothing, and would block
   * that shorter id for the session. The log names it as sent, for the driver to match
   * (README "Rules in detail", Run ids), unless it is over the host's cap on ids it sends.
   */
  admitInvalid(value: Record<string, unknown>): InvalidRunVerdict {
    const { runId } = value;
    if (isWireId(runId)) {
      if (this.seen(runId)) return { kind: 'log' };
      this.#rememberSecrets(value);
      this.#runIds.remember(runId);
      return { kind: 'refuse', runId };
    }
    if (typeof runId !== 'string' || runId.length > HOST_LIMITS.nameFieldChars) {
      return { kind: 'log' };
    }
    // Learned before the log echoes the id: it is the driver's text, and may hold a secret.
    this.#rememberSecrets(value);
    return { kind: 'log', runId };
  }

  #reject(runId: string, code: string, message: string, retryable = false): Admission<TRuntime> {
    this.#runIds.remember(runId);
    return { kind: 'reject', error: refusal(code, message, retryable) };
  }

  /**
   * Learns the secrets of a `run` frame that will not run (rejected, invalid): remembered, not
   * pinned. A frame over the limit only gets its two named secrets learned; it is refused
   * before anything could echo the rest.
   */
  #rememberSecrets(frame: Record<string, unknown>): void {
    const values = runSecretValues(frame);
    for (const value of values.length > MAX_RUN_SECRETS ? namedRunSecrets(frame) : values) {
      this.#secrets.add(value);
    }
  }
}

const SECRET_FIELD_NAMES = [...RUN_SECRET_VALUE_FIELDS, ...RUN_SECRET_MAP_FIELDS].join(', ');

function refusal(code: string, message: string, retryable = false): WireError {
  return { code, message, retryable };
}
