import type {
  EngineEmitter,
  QuestionOutcome,
  QuestionRequest,
  ToolEndEvent,
  ToolStartEvent,
} from './engine.js';
import type { LogLevel } from './frames.js';
import { HOST_LIMITS, capPayload, capString } from './host-limits.js';
import type { DeltaRedactor, StreamScrubber } from './redactor.js';

/** The run state an emitter writes through (owned by the host). */
export interface EmitterRun {
  readonly runId: string;
  readonly ended: boolean;
  readonly muted: boolean;
  nativeSessionId: string | undefined;
  readonly text: DeltaRedactor;
  readonly thinking: DeltaRedactor;
  readonly logs: StreamScrubber;
  logLevel: LogLevel;
}

/** Where an emitter's frames go: the host's numbered run frames, deltas and diagnostics. */
export interface EmitterSink<R extends EmitterRun> {
  runEvent(run: R, frame: Record<string, unknown>): void;
  queueDelta(run: R, type: 'text' | 'thinking', delta: string): void;
  /** Backpressure: resolves when the driver can take more (README "Backpressure"). */
  afterEmit(run: R): Promise<void>;
  ask(run: R, request: QuestionRequest): Promise<QuestionOutcome>;
  log(level: LogLevel, message: string, code: undefined, runId: string): void;
  /** The engine reported its resumable session id. */
  sessionChanged(nativeSessionId: string): void;
}

/**
 * The emitter an engine gets for one run: every value is capped (README "Caps"), deltas and the
 * log channel are redacted as streams (README "Secrets split across writes"), and calls after
 * the run ended are ignored.
 */
export function createRunEmitter<R extends EmitterRun>(
  run: R,
  sink: EmitterSink<R>,
): EngineEmitter {
  const { nameFieldChars, textFieldChars, codeFieldChars } = HOST_LIMITS;
  const live = () => !run.ended && !run.muted;
  const idle = Promise.resolve();
  const delta = (type: 'text' | 'thinking', value: string) => {
    if (!live() || typeof value !== 'string' || value === '') return idle;
    const redactor = type === 'text' ? run.text : run.thinking;
    const safe = redactor.push(value);
    if (safe !== '') sink.queueDelta(run, type, safe);
    return sink.afterEmit(run);
  };
  const event = (frame: Record<string, unknown>) => {
    sink.runEvent(run, frame);
    return sink.afterEmit(run);
  };
  return {
    text: (value) => delta('text', value),
    thinking: (value) => delta('thinking', value),
    toolStart: (tool: ToolStartEvent) => {
      if (!live()) return idle;
      const input = capPayload(tool.input);
      return event({
        type: 'tool_start',
        toolCallId: capString(String(tool.toolCallId), nameFieldChars),
        name: capString(String(tool.name), nameFieldChars),
        ...('value' in input ? { input: input.value } : {}),
        ...(input.truncated ? { truncated: true } : {}),
      });
    },
    toolEnd: (tool: ToolEndEvent) => {
      if (!live()) return idle;
      const output = capPayload(tool.output);
      return event({
        type: 'tool_end',
        toolCallId: capString(String(tool.toolCallId), nameFieldChars),
        name: capString(String(tool.name), nameFieldChars),
        ...('value' in output ? { output: output.value } : {}),
        ...(tool.isError === true ? { isError: true } : {}),
        ...(output.truncated ? { truncated: true } : {}),
      });
    },
    progress: (message) => {
      if (!live()) return idle;
      return event({ type: 'progress', message: capString(String(message), textFieldChars) });
    },
    warning: (code, message) => {
      if (!live()) return idle;
      return event({
        type: 'warning',
        code: capString(String(code), codeFieldChars),
        message: capString(String(message), textFieldChars),
      });
    },
    session: (nativeSessionId) => {
      if (!live() || typeof nativeSessionId !== 'string') return idle;
      const capped = capString(nativeSessionId, textFieldChars);
      run.nativeSessionId = capped;
      sink.sessionChanged(capped);
      return event({ type: 'session', nativeSessionId: capped });
    },
    question: (request: QuestionRequest) => sink.ask(run, request),
    log: (level, message) => {
      if (!live()) return;
      run.logLevel = level;
      const safe = run.logs.write(capString(String(message), textFieldChars));
      if (safe !== '') sink.log(level, safe, undefined, run.runId);
    },
  };
}
