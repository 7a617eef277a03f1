import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { EngineEmitter, EngineRunOptions, RunnerEngine } from '../engine.js';
import { runSecretValues } from '../run-secrets.js';

/**
 * One step of a script. The scripted engine runs `JSON.parse(message).script`, step by step;
 * a message that is not such a JSON document is echoed back as text.
 */
export type ScriptStep =
  | { op: 'text'; text: string; repeat?: number }
  | { op: 'thinking'; text: string }
  | {
      op: 'tool';
      toolCallId: string;
      name: string;
      input?: unknown;
      output?: unknown;
      isError?: boolean;
    }
  | { op: 'progress'; message: string }
  | { op: 'warning'; code: string; message: string }
  | { op: 'session'; nativeSessionId: string }
  /** Asks; the outcome is reported back as text `question:<JSON outcome>`. */
  | { op: 'question'; prompt: string; options?: string[]; timeoutMs?: number }
  /** Sleeps; stops early when the run is cancelled unless `ignoreSignal`. */
  | { op: 'wait'; ms: number; ignoreSignal?: boolean }
  /** Never settles and ignores the abort signal (the host must give up after its grace period). */
  | { op: 'hang' }
  | { op: 'fail'; message: string; code?: string; retryable?: boolean }
  /**
   * Emits `bytes` of text in `chunkBytes` deltas, then a progress `memory:{…}` report; it turns
   * on V8's `gc()` in the host process to measure retained memory.
   */
  | { op: 'flood'; bytes: number; chunkBytes?: number }
  /** Tries every way to leak the run's secrets, then fails with them in its error message. */
  | { op: 'leak' }
  /** Kills the host process (SIGKILL): for "host killed mid-run" against a socket host. */
  | { op: 'crash' }
  /** Reports the file access it was given as text `permissions:<JSON of options.permissions>`. */
  | { op: 'permissions' };

export interface ScriptedTestEngineOptions {
  id?: string;
  displayName?: string;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** A full garbage collection, when the runtime lets us expose one (V8 does, at run time). */
function fullGc(): (() => void) | undefined {
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as unknown;
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  }
}

async function leak(options: EngineRunOptions, emitter: EngineEmitter): Promise<never> {
  const secrets = runSecretValues(options).filter((value) => value !== '');
  await emitter.text(`options as JSON: ${JSON.stringify(options)}`);
  for (const secret of secrets) {
    await emitter.text(`token=${secret};`);
    for (const ch of secret) await emitter.text(ch);
    await emitter.thinking(secret.slice(0, 3));
    await emitter.thinking(secret.slice(3));
    await emitter.toolStart({
      toolCallId: 'leak',
      name: secret,
      input: { token: secret, [secret]: [secret] },
    });
    await emitter.toolEnd({
      toolCallId: 'leak',
      name: 'leak',
      output: `output ${secret}`,
      isError: true,
    });
    await emitter.progress(`progress ${secret}`);
    await emitter.warning(secret, `warning ${secret}`);
    emitter.log('error', `log ${secret}`);
    await emitter.session(`session-${secret}`);
    await emitter.question({ prompt: `question ${secret}`, options: [secret], timeoutMs: 50 });
  }
  const error = new Error(`engine failed holding ${secrets.join(' and ')}`) as Error & {
    code: string;
  };
  error.code = 'leaky_engine';
  throw error;
}

async function runStep(
  step: ScriptStep,
  options: EngineRunOptions,
  emitter: EngineEmitter,
  signal: AbortSignal,
): Promise<void> {
  switch (step.op) {
    case 'text':
      for (let i = 0; i < (step.repeat ?? 1); i += 1) {
        if (signal.aborted) return;
        await emitter.text(step.text);
      }
      return;
    case 'thinking':
      return emitter.thinking(step.text);
    case 'tool':
      await emitter.toolStart({ toolCallId: step.toolCallId, name: step.name, input: step.input });
      return emitter.toolEnd({
        toolCallId: step.toolCallId,
        name: step.name,
        output: step.output,
        ...(step.isError !== undefined ? { isError: step.isError } : {}),
      });
    case 'progress':
      return emitter.progress(step.message);
    case 'warning':
      return emitter.warning(step.code, step.message);
    case 'session':
      return emitter.session(step.nativeSessionId);
    case 'question': {
      const outcome = await emitter.question({
        prompt: step.prompt,
        ...(step.options !== undefined ? { options: step.options } : {}),
        ...(step.timeoutMs !== undefined ? { timeoutMs: step.timeoutMs } : {}),
      });
      return emitter.text(`question:${JSON.stringify(outcome)}`);
    }
    case 'wait':
      return sleep(step.ms, step.ignoreSignal === true ? undefined : signal);
    case 'hang':
      return new Promise<void>(() => {});
    case 'fail': {
      const error = new Error(step.message) as Error & { code?: string; retryable?: boolean };
      if (step.code !== undefined) error.code = step.code;
      if (step.retryable !== undefined) error.retryable = step.retryable;
      throw error;
    }
    case 'flood': {
      // A fresh string per delta, as a real engine produces: re-sending one interned string
      // would hide a host that buffers instead of pushing back.
      const template = Buffer.alloc(Math.max(16, step.chunkBytes ?? 64 * 1024), 'x');
      const collect = fullGc();
      // Memory still held after a full collection: what the host retains, not garbage that a
      // busy machine has not collected yet.
      const retained = () => {
        collect?.();
        const usage = process.memoryUsage();
        return usage.heapUsed + usage.external;
      };
      const rssBefore = process.memoryUsage.rss();
      const heapBefore = retained();
      let rssMax = rssBefore;
      let heapMax = heapBefore;
      let sent = 0;
      let emits = 0;
      const sampleEvery = Math.max(1, Math.floor((4 * 1024 * 1024) / template.length));
      while (sent < step.bytes && !signal.aborted) {
        template.write(String(emits).padStart(12, '0'), 'latin1');
        const size = Math.min(template.length, step.bytes - sent);
        await emitter.text(template.toString('latin1', 0, size));
        sent += size;
        emits += 1;
        rssMax = Math.max(rssMax, process.memoryUsage.rss());
        if (emits % sampleEvery === 0) heapMax = Math.max(heapMax, retained());
      }
      const report = { rssBefore, rssMax, heapBefore, heapMax, sent, gc: collect !== undefined };
      return emitter.progress(`memory:${JSON.stringify(report)}`);
    }
    case 'leak':
      return leak(options, emitter);
    case 'crash':
      process.kill(process.pid, 'SIGKILL');
      return new Promise<void>(() => {});
    case 'permissions':
      return emitter.text(`permissions:${JSON.stringify(options.permissions ?? null)}`);
  }
}

/**
 * The engine a host under test loads for the conformance kit. It follows the script in each
 * run's message (see {@link ScriptStep}); it never touches the network or the filesystem.
 */
export function createScriptedTestEngine(options: ScriptedTestEngineOptions = {}): RunnerEngine {
  return {
    id: options.id ?? 'scripted',
    displayName: options.displayName ?? 'Scripted test engine',
    async stream(message, runOptions, emitter, _runtime, signal) {
      let script: ScriptStep[] | undefined;
      try {
        const parsed = JSON.parse(message) as { script?: unknown };
        if (Array.isArray(parsed.script)) script = parsed.script as ScriptStep[];
      } catch {
        script = undefined;
      }
      if (script === undefined) {
        await emitter.text(message);
        return;
      }
      for (const step of script) {
        if (signal.aborted) return;
        await runStep(step, runOptions, emitter, signal);
      }
    },
  };
}
