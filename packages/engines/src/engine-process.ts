import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import type { CommandWrapper } from './command-wrapper.js';
import {
  ENGINE_CHILD_LIMITS,
  childMessageSchema,
  type ChildMessage,
  type EmitPayload,
} from './engine-child-protocol.js';
import { ENGINE_CHILD_SOURCE, RESOLVE_HOOKS_SOURCE } from './engine-child-source.js';
import type { TurnFileAccess } from './permissions.js';

/** Why an engine process could not do what it was asked. */
export type EngineProcessFailure =
  | { kind: 'resolve' | 'import' | 'export' | 'construct'; message: string }
  | { kind: 'exited'; message: string }
  | { kind: 'protocol'; message: string }
  | { kind: 'timeout'; message: string };

export class EngineProcessError extends Error {
  readonly failure: EngineProcessFailure;
  constructor(failure: EngineProcessFailure) {
    super(failure.message);
    this.name = 'EngineProcessError';
    this.failure = failure;
  }
}

export interface EngineProcessOptions {
  entryPath: string;
  /** Undefined: the module's default export. */
  exportName?: string;
  /** Folders resolution may reach (the engine folder, the pack). */
  roots: readonly string[];
  cwd: string;
  env: Record<string, string>;
  /** The file access of the turns this process serves: its walls are never wider. */
  fileAccess?: TurnFileAccess;
  wrap?: CommandWrapper;
  startTimeoutMs: number;
  /** The engine's console output, one line at a time (the caller scrubs and routes it). */
  onOutput(stream: 'stdout' | 'stderr', line: string): void;
  /** `log` calls and protocol diagnostics that belong to no run. */
  onLog(level: string, message: string, runId?: string): void;
}

export interface RunHandlers {
  emit(payload: EmitPayload): Promise<unknown>;
}

export type RunEnd =
  | { ok: true; nativeSessionId?: string }
  | {
      ok: false;
      error: { message: string; code?: string | undefined; retryable?: boolean | undefined };
    };

interface Waiter {
  accept(message: ChildMessage): boolean;
  resolve(message: ChildMessage): void;
}

function lineSplitter(
  stream: Readable,
  maxBytes: number,
  onLine: (line: string) => void,
  onOverflow: () => void,
): void {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  stream.on('data', (chunk: Buffer) => {
    let start = 0;
    for (let newline = chunk.indexOf(10); newline !== -1; newline = chunk.indexOf(10, start)) {
      pending.push(chunk.subarray(start, newline));
      const line = Buffer.concat(pending).toString('utf8');
      pending = [];
      pendingBytes = 0;
      start = newline + 1;
      onLine(line);
    }
    if (start < chunk.length) {
      pending.push(chunk.subarray(start));
      pendingBytes += chunk.length - start;
      if (pendingBytes > maxBytes) {
        pending = [];
        pendingBytes = 0;
        onOverflow();
      }
    }
  });
  stream.on('end', () => {
    if (pending.length > 0) onLine(Buffer.concat(pending).toString('utf8'));
  });
}

/**
 * One Node child hosting one custom engine module. The parent side of the pipe: it validates
 * everything the child says, turns `emit` lines into calls of the run's handlers (answering each
 * so the engine's `await emitter.text()` resolves only when the driver took it), and ends the
 * child when it breaks the protocol.
 */
export class EngineProcess {
  readonly #child: ChildProcess;
  readonly #channel: Readable & Writable;
  readonly #options: EngineProcessOptions;
  readonly #runs = new Map<
    string,
    { handlers: RunHandlers; end(value: RunEnd): void; lost(reason: string): void }
  >();
  readonly #waiters: Waiter[] = [];
  #queue: Promise<void> = Promise.resolve();
  #queued = 0;
  #exitReason: string | undefined;
  /** Set when the engine asked `invalidateEngineInstance()`. */
  invalidated = false;
  readonly exited: Promise<void>;

  private constructor(options: EngineProcessOptions) {
    this.#options = options;
    const command = {
      file: process.execPath,
      args: ['--input-type=module', '-e', ENGINE_CHILD_SOURCE],
      cwd: options.cwd,
      env: options.env,
      ...(options.fileAccess !== undefined ? { fileAccess: options.fileAccess } : {}),
    };
    const wrapped = options.wrap !== undefined ? options.wrap(command) : command;
    this.#child = spawn(wrapped.file, [...wrapped.args], {
      cwd: wrapped.cwd,
      env: wrapped.env,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
    this.#channel = this.#child.stdio[3] as unknown as Readable & Writable;
    this.#channel.on('error', () => {});
    this.exited = new Promise((resolve) => {
      const done = (reason: string) => {
        this.#exitReason ??= reason;
        this.#killGroup();
        this.#failAll();
        resolve();
      };
      this.#child.once('error', (error) => done(`could not start: ${error.message}`));
      this.#child.once('exit', (code, signal) =>
        done(signal !== null ? `killed by ${signal}` : `exited with code ${code}`),
      );
    });
    for (const name of ['stdout', 'stderr'] as const) {
      const stream = this.#child[name];
      if (stream === null) continue;
      lineSplitter(
        stream,
        ENGINE_CHILD_LIMITS.maxOutputLineBytes,
        (line) => options.onOutput(name, line),
        () => options.onOutput(name, '[a line over the output limit was dropped]'),
      );
    }
    lineSplitter(
      this.#channel,
      ENGINE_CHILD_LIMITS.maxLineBytes,
      (line) => this.#receive(line),
      () => this.#violation(`a line over ${ENGINE_CHILD_LIMITS.maxLineBytes} bytes`),
    );
  }

  /** Starts the child and loads the engine module; throws EngineProcessError when it cannot. */
  static async start(options: EngineProcessOptions): Promise<EngineProcess> {
    const engine = new EngineProcess(options);
    const reply = await engine
      .#request(
        {
          t: 'load',
          entry: options.entryPath,
          exportName: options.exportName ?? null,
          roots: options.roots,
          hooks: RESOLVE_HOOKS_SOURCE,
        },
        (message) => message.t === 'loaded' || message.t === 'load_failed',
        options.startTimeoutMs,
      )
      .catch((error: unknown) => {
        engine.kill();
        throw error;
      });
    if (reply.t === 'load_failed') {
      engine.kill();
      throw new EngineProcessError({ kind: reply.kind, message: reply.message });
    }
    return engine;
  }

  get alive(): boolean {
    return this.#exitReason === undefined;
  }

  /** (Re)constructs the engine instance with `init`. */
  async construct(init: Record<string, unknown>, timeoutMs: number): Promise<void> {
    const reply = await this.#request(
      { t: 'instance', init },
      (message) => message.t === 'constructed' || message.t === 'construct_failed',
      timeoutMs,
    );
    if (reply.t === 'construct_failed')
      throw new EngineProcessError({ kind: 'construct', message: reply.message });
  }

  /** Runs one turn; resolves with how `run(turn)` ended (or rejects when the child died). */
  run(runId: string, turn: Record<string, unknown>, handlers: RunHandlers): Promise<RunEnd> {
    if (!this.alive)
      return Promise.reject(
        new EngineProcessError({ kind: 'exited', message: this.#exitReason ?? '' }),
      );
    return new Promise<RunEnd>((resolve, reject) => {
      this.#runs.set(runId, {
        handlers,
        end: (value) => {
          this.#runs.delete(runId);
          resolve(value);
        },
        lost: (reason) => {
          this.#runs.delete(runId);
          reject(new EngineProcessError({ kind: 'exited', message: reason }));
        },
      });
      this.#send({ t: 'run', id: runId, turn });
    });
  }

  cancel(runId: string): void {
    this.#send({ t: 'cancel', id: runId });
  }

  async maintain(timeoutMs: number): Promise<void> {
    await this.#request({ t: 'maintain' }, (message) => message.t === 'maintained', timeoutMs);
  }

  /** Asks the engine to `dispose()`, then ends the child (at once after `timeoutMs`). */
  async dispose(timeoutMs: number): Promise<void> {
    if (this.alive)
      await this.#request({ t: 'dispose' }, (m) => m.t === 'disposed', timeoutMs).catch(() => {});
    this.kill();
    await this.exited;
  }

  /** Ends the child and everything it started, now. */
  kill(): void {
    this.#exitReason ??= 'stopped';
    this.#killGroup();
    this.#channel.destroy();
  }

  #killGroup(): void {
    const pid = this.#child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }

  #send(message: Record<string, unknown>): void {
    if (!this.alive || this.#channel.destroyed) return;
    this.#channel.write(`${JSON.stringify(message)}\n`);
  }

  #request(
    message: Record<string, unknown>,
    accept: (message: ChildMessage) => boolean,
    timeoutMs: number,
  ): Promise<ChildMessage> {
    return new Promise<ChildMessage>((resolve, reject) => {
      const timer = setTimeout(() => {
        remove();
        reject(
          new EngineProcessError({
            kind: 'timeout',
            message: `the engine process did not answer ${String(message.t)} within ${timeoutMs} ms`,
          }),
        );
      }, timeoutMs);
      timer.unref();
      const waiter: Waiter = {
        accept,
        resolve: (reply) => {
          clearTimeout(timer);
          resolve(reply);
        },
      };
      const remove = () => {
        const at = this.#waiters.indexOf(waiter);
        if (at !== -1) this.#waiters.splice(at, 1);
      };
      if (!this.alive) {
        clearTimeout(timer);
        reject(new EngineProcessError({ kind: 'exited', message: this.#exitReason ?? '' }));
        return;
      }
      this.#waiters.push(waiter);
      void this.exited.then(() => {
        if (!this.#waiters.includes(waiter)) return;
        remove();
        clearTimeout(timer);
        reject(
          new EngineProcessError({
            kind: 'exited',
            message: `the engine process ${this.#exitReason ?? 'exited'}`,
          }),
        );
      });
      this.#send(message);
    });
  }

  #violation(reason: string): void {
    this.#exitReason ??= `broke the protocol: ${reason}`;
    this.#options.onLog('error', `engine process ${this.#exitReason}; it was stopped`);
    this.kill();
  }

  #failAll(): void {
    for (const run of [...this.#runs.values()])
      run.lost(`the engine process ${this.#exitReason ?? 'exited'}`);
  }

  #receive(line: string): void {
    if (line.trim() === '' || !this.alive) return;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      this.#violation('a line that is not JSON');
      return;
    }
    const parsed = childMessageSchema.safeParse(json);
    if (!parsed.success) {
      this.#violation(`an invalid message (${parsed.error.issues[0]?.message ?? 'invalid'})`);
      return;
    }
    const message = parsed.data;
    // Handled in order: text deltas must reach the driver in the order the engine wrote them.
    this.#queued += 1;
    if (this.#queued > ENGINE_CHILD_LIMITS.maxQueuedLines) this.#channel.pause();
    this.#queue = this.#queue
      .then(() => this.#handle(message))
      .catch((error: unknown) => {
        this.#options.onLog('warn', `engine process message failed: ${(error as Error).message}`);
      })
      .finally(() => {
        this.#queued -= 1;
        if (this.#queued <= ENGINE_CHILD_LIMITS.maxQueuedLines / 2) this.#channel.resume();
      });
  }

  async #handle(message: ChildMessage): Promise<void> {
    switch (message.t) {
      case 'emit': {
        const run = this.#runs.get(message.id);
        if (run === undefined) return;
        const { t: _t, id, seq, ...payload } = message;
        const handled = run.handlers.emit(payload as EmitPayload);
        const reply = (value: unknown) =>
          this.#send({ t: payload.method === 'question' ? 'answer' : 'ack', id, seq, value });
        // A question waits for the driver; the rest of the child's lines keep flowing meanwhile.
        if (payload.method === 'question') void handled.then(reply, () => reply(undefined));
        else reply(await handled.catch(() => undefined));
        return;
      }
      case 'log':
        this.#options.onLog(message.level, message.message, message.id);
        return;
      case 'invalidate':
        this.invalidated = true;
        return;
      case 'end': {
        const run = this.#runs.get(message.id);
        if (run === undefined) return;
        run.end(
          message.ok
            ? message.nativeSessionId !== undefined
              ? { ok: true, nativeSessionId: message.nativeSessionId }
              : { ok: true }
            : { ok: false, error: message.error },
        );
        return;
      }
      default: {
        const waiter = this.#waiters.find((candidate) => candidate.accept(message));
        if (waiter === undefined) return;
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      }
    }
  }
}
