import { randomUUID } from 'node:crypto';
import type { RunHandle, RunOptions, RunOutcome, RunRequest } from './client.js';
import type { ClientChannel } from './client-channel.js';
import { ClientRun } from './client-run.js';
import { RunnerHostError, isRunnerHostError } from './errors.js';
import {
  MAX_ID_CHARS,
  isWireId,
  type FailedFrame,
  type ResultFrame,
  type RunEventFrame,
  type WelcomeFrame,
} from './frames.js';

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
 * one with `failed{code:"host_lost"}` when the host is lost, or with a `failed` of its own when
 * one of its frames cannot be sent (README "Frames the client cannot send").
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
    if (!isWireId(runId)) {
      // The host answers a run by its id and never cuts one to fit: a run sent with an id it
      // cannot carry back would wait for an answer until the host is lost (README "Rules in
      // detail", Run ids). Refused before anything is sent.
      throw new RunnerHostError(
        'ERR_INVALID_RUN_ID',
        `runId must be a string of 1 to ${MAX_ID_CHARS} characters, not ${describeRunId(runId)}`,
      );
    }
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
        if (run.sent) this.#send(run, { type: 'cancel', runId });
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
        const { runId: _ignored, ...rest } = request;
        run.sent = this.#send(run, { ...rest, type: 'run', runId });
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

  /**
   * Sends a frame of `run`. One that cannot be encoded (over `maxFrameBytes`, not JSON) ends the
   * run with a `failed` made here: this runs in a promise callback or an abort listener, where a
   * throw would be an unhandled rejection and leave the run's outcome waiting forever.
   */
  #send(run: ClientRun, frame: { type: 'run' | 'cancel'; runId: string }): boolean {
    try {
      this.#options.channel.send(frame);
      return true;
    } catch (error) {
      const failed = notSent(run, frame.type, error);
      run.deliver(failed);
      this.#end(run, failed);
      return false;
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

/** `frame_too_large` for a frame over the cap, `invalid_frame` for one JSON cannot encode. */
function notSent(run: ClientRun, frameType: string, error: unknown): FailedFrame {
  const tooLarge = isRunnerHostError(error) && error.code === 'ERR_FRAME_TOO_LARGE';
  return {
    type: 'failed',
    runId: run.runId,
    seq: run.lastSeq + 1,
    error: {
      code: tooLarge ? 'frame_too_large' : 'invalid_frame',
      message: `${frameType} frame not sent: ${error instanceof Error ? error.message : String(error)}`,
      retryable: false,
    },
  };
}

/** A refused `runId` in an error message: its length, never its (possibly huge) text. */
function describeRunId(runId: unknown): string {
  return typeof runId === 'string'
    ? `${runId.length} characters`
    : `a value of type ${typeof runId}`;
}

function cancelledLocally(run: ClientRun): ResultFrame {
  return { type: 'result', runId: run.runId, seq: run.lastSeq + 1, stopReason: 'cancelled' };
}
