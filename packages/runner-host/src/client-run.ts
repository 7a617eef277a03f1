import type { QuestionAnswer, RunEvent, RunHandle, RunOptions, RunOutcome } from './client.js';
import { RunnerHostError } from './errors.js';
import type { QuestionFrame } from './frames.js';

/** The client's count of events buffered for iteration across its runs (its flow control). */
export interface EventBuffer {
  /** `count` events were buffered (positive) or taken or dropped (negative). */
  change(count: number): void;
}

/**
 * One run on the driver side: its events (buffered for iteration, or handed to `onEvent`), its
 * open questions and its outcome. The client routes frames to it and owns the channel.
 */
export class ClientRun {
  lastSeq = 0;
  ended = false;
  /** Whether the `run` frame went out (a cancel before that ends the run locally). */
  sent = false;
  detachSignal: () => void = () => {};
  readonly outcome: Promise<RunOutcome>;
  readonly #options: RunOptions;
  readonly #buffer: EventBuffer;
  readonly #onProtocolError: ((message: string) => void) | undefined;
  readonly #questions = new Map<string, AbortController>();
  #events: RunEvent[] = [];
  #waiter: (() => void) | undefined;
  #resolveOutcome!: (outcome: RunOutcome) => void;
  #iterating = false;

  constructor(
    readonly runId: string,
    options: RunOptions,
    buffer: EventBuffer,
    onProtocolError: ((message: string) => void) | undefined,
  ) {
    this.#options = options;
    this.#buffer = buffer;
    this.#onProtocolError = onProtocolError;
    this.outcome = new Promise<RunOutcome>((resolve) => {
      this.#resolveOutcome = resolve;
    });
  }

  deliver(event: RunEvent): void {
    this.lastSeq = event.seq;
    if (this.#options.onEvent !== undefined) {
      try {
        this.#options.onEvent(event);
      } catch (error) {
        this.#onProtocolError?.(`onEvent threw: ${(error as Error).message}`);
      }
    } else {
      this.#events.push(event);
      this.#buffer.change(1);
      const wake = this.#waiter;
      this.#waiter = undefined;
      wake?.();
    }
  }

  /** Settles the outcome once; false when the run had already ended. */
  end(outcome: RunOutcome): boolean {
    if (this.ended) return false;
    this.ended = true;
    this.detachSignal();
    for (const controller of this.#questions.values()) controller.abort();
    this.#questions.clear();
    this.#resolveOutcome(outcome);
    this.#waiter?.();
    return true;
  }

  /** The host resolved a question (answered, declined, timed out): stop waiting for `onQuestion`. */
  questionResolved(questionId: string): void {
    this.#questions.get(questionId)?.abort();
    this.#questions.delete(questionId);
  }

  /** Asks `onQuestion` (or declines) and sends the answer, unless the question ended meanwhile. */
  answer(frame: QuestionFrame, send: (frame: object) => void): void {
    const controller = new AbortController();
    this.#questions.set(frame.questionId, controller);
    const handler = this.#options.onQuestion;
    const decline = () =>
      send({ type: 'answer', runId: this.runId, questionId: frame.questionId, decline: true });
    Promise.resolve()
      .then(() =>
        handler === undefined
          ? ({ decline: true } as const)
          : handler(frame, { signal: controller.signal }),
      )
      .catch(() => ({ decline: true }) as const)
      .then((answer: QuestionAnswer) => {
        if (controller.signal.aborted || this.ended) return;
        this.#questions.delete(frame.questionId);
        if ('decline' in answer && answer.decline) {
          decline();
        } else {
          const { selected, freeText } = answer as { selected?: string[]; freeText?: string };
          send({
            type: 'answer',
            runId: this.runId,
            questionId: frame.questionId,
            selected: selected ?? [],
            ...(freeText !== undefined ? { freeText } : {}),
          });
        }
      })
      // An answer that cannot be sent (not an object, over the frame cap) is a decline (README
      // "Frames the client cannot send"): the host's question must not wait for its timeout, and
      // this chain must never reject unhandled (an unhandled rejection ends the driver's process).
      .catch(() => {
        if (controller.signal.aborted || this.ended) return;
        this.#questions.delete(frame.questionId);
        try {
          decline();
        } catch {
          // Even the decline is over the cap (ids that grow when escaped, from a hostile host):
          // the host's question runs to its timeout. Nothing here may throw.
        }
      });
  }

  /** The caller's view: `outcome` and a one-time async iterator over the buffered events. */
  handle(): RunHandle {
    return {
      runId: this.runId,
      outcome: this.outcome,
      [Symbol.asyncIterator]: () => {
        if (this.#iterating)
          throw new RunnerHostError('ERR_INVALID_OPTIONS', 'a run can be iterated once');
        this.#iterating = true;
        return {
          next: async (): Promise<IteratorResult<RunEvent>> => {
            for (;;) {
              const event = this.#events.shift();
              if (event !== undefined) {
                this.#buffer.change(-1);
                return { value: event, done: false };
              }
              if (this.ended) return { value: undefined, done: true };
              await new Promise<void>((resolve) => {
                this.#waiter = resolve;
              });
            }
          },
          return: (): Promise<IteratorResult<RunEvent>> => {
            this.#buffer.change(-this.#events.length);
            this.#events = [];
            return Promise.resolve({ value: undefined, done: true });
          },
        };
      },
    };
  }
}
