import type { QuestionOutcome, QuestionRequest } from './engine.js';
import type { AnswerFrame, LogLevel } from './frames.js';
import type { HostTimers } from './host.js';
import { HOST_LIMITS, capString } from './host-limits.js';

/** What the registry needs to know about a run (the host's run state). */
export interface QuestionRun {
  readonly runId: string;
  readonly ended: boolean;
  readonly stopping: unknown;
}

interface PendingQuestion<R extends QuestionRun> {
  run: R;
  questionId: string;
  options: readonly string[] | undefined;
  timer: unknown;
  resolve: (outcome: QuestionOutcome) => void;
}

export interface QuestionRegistryOptions<R extends QuestionRun> {
  timers: HostTimers;
  /** Longest wait for an answer (README "Questions"). */
  timeoutMs: number;
  /** Questions that may wait at once per run. */
  maxPendingPerRun: number;
  /** Whether the driver announced the `questions` capability (read at each question). */
  driverAnswers: () => boolean;
  /** Sends a numbered frame of the run (`question`, `question_resolved`, `warning`). */
  emit: (run: R, frame: Record<string, unknown>) => void;
  log: (level: LogLevel, message: string, code?: string, runId?: string) => void;
}

/**
 * The questions of one host session: asked by engines, answered (or declined, timed out,
 * cancelled) exactly once, with every wait bounded (README "Questions").
 */
export class QuestionRegistry<R extends QuestionRun> {
  readonly #options: QuestionRegistryOptions<R>;
  readonly #pending = new Map<string, PendingQuestion<R>>();
  readonly #byRun = new Map<R, Set<PendingQuestion<R>>>();
  #counter = 0;

  constructor(options: QuestionRegistryOptions<R>) {
    this.#options = options;
  }

  ask(run: R, request: QuestionRequest): Promise<QuestionOutcome> {
    const { emit, maxPendingPerRun, timeoutMs: hostTimeoutMs, timers } = this.#options;
    if (run.ended || run.stopping !== undefined) return Promise.resolve({ outcome: 'cancelled' });
    if (!this.#options.driverAnswers()) {
      emit(run, {
        type: 'warning',
        code: 'question_auto_declined',
        message:
          'the driver did not announce the "questions" capability; the question was declined',
      });
      return Promise.resolve({ outcome: 'declined' });
    }
    const ofRun = this.#byRun.get(run) ?? new Set<PendingQuestion<R>>();
    if (ofRun.size >= maxPendingPerRun) {
      emit(run, {
        type: 'warning',
        code: 'question_limit',
        message: `more than ${maxPendingPerRun} questions pending; the question was declined`,
      });
      return Promise.resolve({ outcome: 'declined' });
    }
    this.#counter += 1;
    const questionId = `q${this.#counter}`;
    const choices = Array.isArray(request.options)
      ? request.options
          .slice(0, HOST_LIMITS.questionOptions)
          .map((o) => capString(String(o), HOST_LIMITS.nameFieldChars))
      : undefined;
    const timeoutMs = Math.min(
      typeof request.timeoutMs === 'number' && request.timeoutMs >= 0
        ? request.timeoutMs
        : hostTimeoutMs,
      hostTimeoutMs,
    );
    return new Promise<QuestionOutcome>((resolve) => {
      const question: PendingQuestion<R> = {
        run,
        questionId,
        options: choices,
        timer: undefined,
        resolve,
      };
      this.#pending.set(questionId, question);
      ofRun.add(question);
      this.#byRun.set(run, ofRun);
      emit(run, {
        type: 'question',
        questionId,
        prompt: capString(String(request.prompt), HOST_LIMITS.textFieldChars),
        ...(choices !== undefined ? { options: choices } : {}),
      });
      question.timer = timers.setTimeout(
        () => this.#resolve(question, { outcome: 'timeout' }),
        timeoutMs,
      );
    });
  }

  /** Applies a driver's `answer`; unknown or invalid answers are logged and change nothing. */
  answer(frame: AnswerFrame): void {
    const question = this.#pending.get(frame.questionId);
    if (
      question === undefined ||
      (frame.runId !== undefined && frame.runId !== question.run.runId)
    ) {
      this.#options.log(
        'warn',
        `no pending question ${frame.questionId}; answer ignored`,
        'unknown_question',
        frame.runId,
      );
      return;
    }
    if (frame.decline === true) {
      this.#resolve(question, { outcome: 'declined' });
      return;
    }
    const selected = frame.selected ?? [];
    if (question.options !== undefined && selected.some((s) => !question.options?.includes(s))) {
      this.#options.log(
        'warn',
        `answer to ${frame.questionId} selects an unknown option; ignored`,
        'invalid_answer',
      );
      return;
    }
    this.#resolve(question, {
      outcome: 'answered',
      selected,
      ...(frame.freeText !== undefined ? { freeText: frame.freeText } : {}),
    });
  }

  /** Resolves every pending question of `run` as `cancelled`. */
  cancelAll(run: R): void {
    for (const question of [...(this.#byRun.get(run) ?? [])]) {
      this.#resolve(question, { outcome: 'cancelled' });
    }
    this.#byRun.delete(run);
  }

  #resolve(question: PendingQuestion<R>, outcome: QuestionOutcome): void {
    if (!this.#pending.delete(question.questionId)) return;
    this.#byRun.get(question.run)?.delete(question);
    this.#options.timers.clearTimeout(question.timer);
    if (!question.run.ended) {
      this.#options.emit(question.run, {
        type: 'question_resolved',
        questionId: question.questionId,
        outcome: outcome.outcome,
      });
    }
    question.resolve(outcome);
  }
}
