import { parseDriverFrame, type DriverFrame, type HelloFrame, type RunFrame } from './frames.js';
import type { RunnerHostExit } from './host.js';
import type { HostHandshake } from './host-handshake.js';
import type { HostTransport } from './host-transport.js';
import type { InvalidRunVerdict, RunAdmission } from './run-admission.js';
import type { RunSupervisor } from './run-supervisor.js';

export interface HostDispatchParts<TRuntime> {
  handshake: HostHandshake;
  admission: RunAdmission<TRuntime>;
  runs: RunSupervisor<TRuntime>;
  transport: HostTransport;
  /** Ends the session (at most once; later calls change nothing). */
  stop: (reason: RunnerHostExit['reason']) => void;
}

/**
 * Routes each line the driver sends to the unit that answers it (README "Rules in detail"):
 * the handshake, run admission, the run supervisor, or a direct reply. Invalid frames are refused
 * or logged here, and nothing the driver sends is acted on once the session is stopping.
 */
export class HostDispatcher<TRuntime> {
  readonly #parts: HostDispatchParts<TRuntime>;

  constructor(parts: HostDispatchParts<TRuntime>) {
    this.#parts = parts;
  }

  /** One decoded line from the driver. */
  readonly onFrame = (value: Record<string, unknown>): void => {
    const { handshake, admission, transport } = this.#parts;
    if (handshake.phase === 'stopping') return;
    const parsed = parseDriverFrame(value);
    if (parsed.kind === 'unknown') return;
    if (parsed.kind === 'invalid') {
      const verdict: InvalidRunVerdict =
        parsed.type === 'run' ? admission.admitInvalid(value) : { kind: 'log' };
      if (verdict.kind === 'refuse') {
        this.#refuse(verdict.runId, 'invalid_frame', `invalid "run" frame: ${parsed.issues}`);
      } else {
        const message = `invalid ${JSON.stringify(parsed.type)} frame ignored: ${parsed.issues}`;
        transport.log('warn', message, 'invalid_frame', verdict.runId);
      }
      return;
    }
    this.#dispatch(parsed.frame);
    transport.throttleInput();
  };

  #dispatch(frame: DriverFrame): void {
    const { transport, runs, stop } = this.#parts;
    switch (frame.type) {
      case 'hello':
        return this.#hello(frame);
      case 'run':
        return this.#run(frame);
      case 'ping':
        return transport.send(
          frame.id !== undefined ? { type: 'pong', id: frame.id } : { type: 'pong' },
        );
      case 'pong':
        return;
      case 'shutdown':
      case 'fatal':
        return stop('shutdown');
      case 'cancel':
        if (this.#notInitialized(frame.runId)) return;
        if (!runs.cancel(frame.runId) && !this.#parts.admission.seen(frame.runId)) {
          const message = `no run ${frame.runId}; cancel ignored`;
          transport.log('warn', message, 'unknown_run', frame.runId);
        }
        return;
      case 'answer':
        if (this.#notInitialized()) return;
        return runs.answer(frame);
    }
  }

  #hello(frame: HelloFrame): void {
    const { handshake, transport, stop } = this.#parts;
    const reply = handshake.hello(frame);
    if (reply.kind === 'repeated') {
      transport.log('warn', 'already initialized; extra "hello" ignored', 'already_initialized');
      return;
    }
    transport.send(reply.frame);
    if (reply.kind === 'fatal') stop('fatal');
  }

  #run(frame: RunFrame): void {
    const { handshake, admission, runs, transport } = this.#parts;
    const admitted = admission.admit(frame, {
      initialized: handshake.phase !== 'awaiting_hello',
      activeRunId: runs.activeRunId,
    });
    if (admitted.kind === 'start') {
      runs.start(frame, admitted.engine, admitted.runSecrets);
    } else if (admitted.kind === 'reject') {
      const { code, message, retryable } = admitted.error;
      this.#refuse(frame.runId, code, message, retryable);
    } else if (admitted.warning !== undefined) {
      transport.log('warn', admitted.warning.message, admitted.warning.code, frame.runId);
    }
  }

  /** A `run` that will not run: one `failed` frame with `seq: 1` and no `accepted`. */
  #refuse(runId: string, code: string, message: string, retryable = false): void {
    this.#parts.transport.send({
      type: 'failed',
      runId,
      seq: 1,
      error: { code, message, retryable },
    });
  }

  /** Before `hello`, `cancel` and `answer` are logged and ignored. */
  #notInitialized(runId?: string): boolean {
    if (this.#parts.handshake.phase !== 'awaiting_hello') return false;
    this.#parts.transport.log(
      'warn',
      'send "hello" first; frame ignored',
      'not_initialized',
      runId,
    );
    return true;
  }
}
