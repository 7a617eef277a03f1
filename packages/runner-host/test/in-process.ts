import { PassThrough } from 'node:stream';
import {
  FrameDecoder,
  startRunnerHost,
  type RunnerEngine,
  type RunnerHostExit,
  type RunnerHostOptions,
} from '../src/index.js';

export interface Frame {
  [key: string]: unknown;
  type: string;
}

/**
 * An in-process host on two PassThrough streams: the driver side writes raw lines and sees every
 * byte and frame the host sends. Waits are event-driven (a frame arrived), never timed.
 */
export class InProcessHost {
  readonly input = new PassThrough();
  readonly output = new PassThrough();
  readonly frames: Frame[] = [];
  readonly done: Promise<RunnerHostExit>;
  #raw: Buffer[] = [];
  #waiters = new Set<() => void>();

  constructor(
    engine: RunnerEngine<unknown> | RunnerEngine<unknown>[],
    options: Partial<Omit<RunnerHostOptions<unknown>, 'input' | 'output'>> = {},
  ) {
    const decoder = new FrameDecoder({
      onFrame: (frame) => {
        this.frames.push(frame as Frame);
        for (const wake of [...this.#waiters]) wake();
      },
      onError: () => {},
    });
    this.output.on('data', (chunk: Buffer) => {
      this.#raw.push(chunk);
      decoder.push(chunk);
    });
    this.done = startRunnerHost({
      ...(Array.isArray(engine) ? { engines: engine } : { engine }),
      runtime: {},
      ...options,
      input: this.input,
      output: this.output,
    }).done;
  }

  get raw(): string {
    return Buffer.concat(this.#raw).toString('utf8');
  }

  send(frame: object): void {
    this.input.write(`${JSON.stringify(frame)}\n`);
  }

  sendRaw(bytes: string | Buffer): void {
    this.input.write(bytes);
  }

  /** Resolves with the first frame (already received or future) that matches. */
  waitFor(match: (frame: Frame) => boolean): Promise<Frame> {
    const found = this.frames.find(match);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve) => {
      const wake = () => {
        const hit = this.frames.find(match);
        if (hit === undefined) return;
        this.#waiters.delete(wake);
        resolve(hit);
      };
      this.#waiters.add(wake);
    });
  }

  terminal(runId: string): Promise<Frame> {
    return this.waitFor((f) => f.runId === runId && (f.type === 'result' || f.type === 'failed'));
  }

  async hello(capabilities: object = {}): Promise<void> {
    this.send({ type: 'hello', protocols: [1], capabilities });
    await this.waitFor((f) => f.type === 'welcome');
  }

  /** Ends the driver's input (EOF) and waits for the host to stop. */
  async close(): Promise<RunnerHostExit> {
    this.input.end();
    return this.done;
  }

  /** The run's numbered frames (`log` frames carry a `runId` but no `seq`). */
  runFrames(runId: string): Frame[] {
    return this.frames.filter((f) => f.runId === runId && f.seq !== undefined);
  }
}
