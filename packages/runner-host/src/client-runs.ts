import { randomUUID } from 'node:crypto';
import type { RunHandle, RunOptions, RunOutcome, RunRequest } from './client.js';
import type { ClientChannel } from './client-channel.js';
import { ClientRun } from './client-run.js';
import { RunnerHostError } from './errors.js';
import type { FailedFrame, ResultFrame, RunEventFrame, WelcomeFrame } from './frames.js';

export interface ClientRunTableOptions {
  channel: Pick<ClientChannel, 'isClosed' | 'send' | 'change'>;
  /** Runs are sent once the host has welcomed the client. */
  welcome: Promise<WelcomeFrame>;
  onProtocolError?: ((message: string) => void) | undefined;
  /** Something now waits for the host: make sure it is watched. */
  watch: () => void;
}

/**
 * The driver's active runs by id: starts each (sent after the welcome, or ended locally when
 * cancelled or the channel is closed first), routes the host's run frames to it, and ends every
 * one with `failed{code:"host_lost"}` when the host is lost.
 */
export class ClientRunTable {
  readonly #options: ClientRunTableOptions;
  readonly #runs = new Map<string, ClientRun>();

  constructor(options: ClientRunTableOptions) {
    this.#options = options;
  }

  get size(): number {
    return this.#runs.size;
  }

  start(request: RunRequest, runOptions: RunOptions): RunHandle {
    const { channel, welcome, onProtocolError, watch } = this.#options;
    const runId = request.runId ?? randomUUID();
    const run = new ClientRun(runId, runOptions, channel, onProtocolError);
    const handle = run.handle();
    if (this.#runs.has(runId)) {
      throw new RunnerHostError(
        'ERR_DUPLICATE_RUN',
        `run ${runId} is already active on this client`,
      );
    }
    if (channel.isClosed) {
      this.#end(run, hostLost(run, 'the channel is closed'));
      return handle;
    }
    this.#runs.set(runId, run);
    const signal = runOptions.signal;
    if (signal !== undefined) {
      const onAbort = () => {
        if (run.ended) return;
        if (run.sent) channel.send({ type: 'cancel', runId });
        else this.#end(run, cancelledLocally(run));
      };
      if (signal.aborted) {
        this.#end(run, cancelledLocally(run));
        return handle;
      }
      signal.addEventListener('abort', onAbort, { once: true });
      run.detachSignal = () => signal.removeEventListener('abort', onAbort);
    }
    void welcome.then(
      () => {
        if (run.ended || channel.isClosed) return;
        run.sent = true;
        const { runId: _ignored, ...rest } = request;
        channel.send({ ...rest, type: 'run', runId });
        watch();
      },
      () => {},
    );
    watch();
    return handle;
  }

  /** A frame of a run; frames of runs this client does not know are dropped. */
  route(frame: RunEventFrame): void {
    const run = this.#runs.get(frame.runId);
    if (run === undefined) return;
    run.deliver(frame);
    if (frame.type === 'question') run.answer(frame, this.#options.channel.send);
    else if (frame.type === 'question_resolved') run.questionResolved(frame.questionId);
    else if (frame.type === 'result' || frame.type === 'failed') this.#end(run, frame);
  }

  /** The host is gone: every active run gets a `failed{code:"host_lost"}` that continues its seq. */
  loseAll(reason: string): void {
    for (const run of [...this.#runs.values()]) {
      const failed = hostLost(run, reason);
      run.deliver(failed);
      this.#end(run, failed);
    }
  }

  #end(run: ClientRun, outcome: RunOutcome): void {
    if (run.end(outcome)) this.#runs.delete(run.runId);
  }
}

function hostLost(run: ClientRun, reason: string): FailedFrame {
  return {
    type: 'failed',
    runId: run.runId,
    seq: run.lastSeq + 1,
    error: { code: 'host_lost', message: `host lost: ${reason}`, retryable: true },
  };
}

function cancelledLocally(run: ClientRun): ResultFrame {
  return { type: 'result', runId: run.runId, seq: run.lastSeq + 1, stopReason: 'cancelled' };
}
