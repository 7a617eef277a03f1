import { spawn, type ChildProcess } from 'node:child_process';
import { createConnection } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { FrameDecoder, encodeFrame } from '../codec.js';
import { assertSocketPathFits } from '../socket-path.js';

/**
 * Where the host under test is: a command line started per case (stdio) or a socket path. A
 * socket host is killed by the last case ("host killed mid-run"): through `killHost` when given
 * (the harness that started the host kills it from outside, e.g. `process.kill(pid, 'SIGKILL')`),
 * otherwise by the scripted engine's `crash` step, which kills the host only when the engine runs
 * inside the host's own process.
 */
export type ConformanceTarget =
  { stdio: string } | { socket: string; killHost?: () => void | Promise<void> };

export interface ReceivedFrame {
  [key: string]: unknown;
  type: string;
}

/**
 * A raw, byte-level driver connection for the kit: it writes whatever bytes a case wants and
 * records every frame (and every raw byte, for secret checks) the host sends.
 */
export class RawPeer {
  readonly frames: ReceivedFrame[] = [];
  readonly decodeErrors: string[] = [];
  readonly child: ChildProcess | undefined;
  #input: Readable;
  #output: Writable;
  #decoder: FrameDecoder;
  #waiters = new Set<() => void>();
  #rawChunks: Buffer[] | undefined;
  #stderr: Buffer[] = [];
  #closed = false;
  readonly closedPromise: Promise<void>;
  #exit: Promise<number | null>;
  /** Frames of this type are counted but not stored (for floods). */
  discardType: string | undefined;
  discardedBytes = 0;
  discardedFrames = 0;

  private constructor(
    input: Readable,
    output: Writable,
    child: ChildProcess | undefined,
    recordRaw: boolean,
  ) {
    this.#input = input;
    this.#output = output;
    this.child = child;
    this.#rawChunks = recordRaw ? [] : undefined;
    this.#decoder = new FrameDecoder({
      onFrame: (frame) => {
        const typed = frame as ReceivedFrame;
        if (this.discardType !== undefined && typed.type === this.discardType) {
          this.discardedFrames += 1;
          this.discardedBytes += typeof typed.delta === 'string' ? typed.delta.length : 0;
          const last = this.frames[this.frames.length - 1];
          // Keep the seq chain checkable: store a stub carrying only runId/seq.
          if (last !== undefined && last.type === '(discarded)') last.seq = typed.seq;
          else
            this.frames.push({
              type: '(discarded)',
              runId: typed.runId,
              seq: typed.seq,
              firstSeq: typed.seq,
            });
        } else {
          this.frames.push(typed);
        }
        this.#wake();
      },
      onError: (error) => {
        this.decodeErrors.push(`${error.code}: ${error.message}`);
        this.#wake();
      },
    });
    input.on('data', (chunk: Buffer) => {
      this.#rawChunks?.push(chunk);
      this.#decoder.push(chunk);
    });
    output.on('error', () => {});
    this.closedPromise = new Promise<void>((resolve) => {
      const finish = () => {
        if (this.#closed) return;
        this.#closed = true;
        this.#decoder.end();
        this.#wake();
        resolve();
      };
      input.on('end', finish);
      input.on('close', finish);
      input.on('error', finish);
    });
    this.#exit = child
      ? new Promise((resolve) => {
          if (child.exitCode !== null) resolve(child.exitCode);
          else child.once('exit', (code) => resolve(code));
        })
      : Promise.resolve(null);
    child?.stderr?.on('data', (chunk: Buffer) => this.#stderr.push(chunk));
  }

  static async open(
    target: ConformanceTarget,
    options: { recordRaw?: boolean } = {},
  ): Promise<RawPeer> {
    if ('stdio' in target) {
      // `exec` replaces the shell, so the pid we hold is the host's own.
      const child = spawn('/bin/sh', ['-c', `exec ${target.stdio}`], {
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      return new RawPeer(child.stdout, child.stdin, child, options.recordRaw ?? false);
    }
    // As `connectRunnerSocket`: Node would connect to a cut, shorter name (socket-path.ts).
    assertSocketPathFits(target.socket, 'the socket path');
    const socket = createConnection({ path: target.socket, allowHalfOpen: true });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    socket.on('error', () => {});
    return new RawPeer(socket, socket, undefined, options.recordRaw ?? false);
  }

  /** The underlying streams, to run the package's own client over this connection. */
  get inputStream(): Readable {
    return this.#input;
  }

  get outputStream(): Writable {
    return this.#output;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get raw(): Buffer {
    return Buffer.concat(this.#rawChunks ?? []);
  }

  get stderr(): string {
    return Buffer.concat(this.#stderr).toString('utf8');
  }

  exitCode(): Promise<number | null> {
    return this.#exit;
  }

  #wake(): void {
    for (const wake of [...this.#waiters]) wake();
  }

  write(bytes: string | Buffer): Promise<void> {
    return new Promise((resolve) => {
      if (this.#output.writableEnded || this.#output.destroyed) return resolve();
      this.#output.write(bytes, () => resolve());
    });
  }

  send(...frames: object[]): Promise<void> {
    return this.write(frames.map((f) => encodeFrame(f)).join(''));
  }

  hello(capabilities: Record<string, unknown> = { questions: true }): Promise<void> {
    return this.send({
      type: 'hello',
      protocols: [1],
      capabilities,
      client: { name: 'conformance-kit' },
    });
  }

  /** Ends our write side (input EOF for the host). */
  end(): void {
    this.#output.end();
  }

  pause(): void {
    this.#input.pause();
  }

  resume(): void {
    this.#input.resume();
  }

  /** Waits for a frame matching `predicate` (searching from `from`), or throws after `timeoutMs`. */
  async waitFor(
    predicate: (frame: ReceivedFrame) => boolean,
    timeoutMs: number,
    what: string,
    from = 0,
  ): Promise<ReceivedFrame> {
    let index = from;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (; index < this.frames.length; index += 1) {
        const frame = this.frames[index] as ReceivedFrame;
        if (predicate(frame)) return frame;
      }
      if (this.#closed) throw new Error(`channel closed while waiting for ${what}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        const waiters = this.#waiters;
        function done() {
          clearTimeout(timer);
          waiters.delete(done);
          resolve();
        }
        waiters.add(done);
      });
    }
  }

  waitClosed(timeoutMs: number): Promise<boolean> {
    return Promise.race([
      this.closedPromise.then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref()),
    ]);
  }

  /** Frames of one run, in arrival order. */
  runFrames(runId: string): ReceivedFrame[] {
    return this.frames.filter((f) => f.runId === runId && f.type !== 'log');
  }

  async close(): Promise<void> {
    this.#output.end();
    if (this.child !== undefined) {
      if (this.child.exitCode === null && this.child.signalCode === null) {
        const exited = await Promise.race([
          this.#exit.then(() => true),
          new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 2000).unref()),
        ]);
        if (!exited) this.child.kill('SIGKILL');
        await this.#exit;
      }
    } else {
      (this.#input as unknown as { destroy(): void }).destroy();
    }
  }
}
