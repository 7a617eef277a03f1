import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HostTimers } from '../src/index.js';

export const packageDir = fileURLToPath(new URL('..', import.meta.url));
export const hostScript = fileURLToPath(new URL('./hosts/host.mjs', import.meta.url));
export const conformanceCli = join(packageDir, 'dist', 'conformance-cli.js');

export async function tempDir(): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), 'runner-host-'));
  return { path, cleanup: () => rm(path, { recursive: true, force: true }) };
}

export interface SocketHost {
  path: string;
  child: ChildProcessWithoutNullStreams;
  stderr: () => string;
  stop: () => Promise<void>;
}

/** Starts test/hosts/host.mjs as a unix socket server in a temp dir. */
export async function startSocketHost(env: NodeJS.ProcessEnv = {}): Promise<SocketHost> {
  const dir = await tempDir();
  const path = join(dir.path, 'host.sock');
  const child = spawn(process.execPath, [hostScript, '--socket', path], {
    env: { ...process.env, ...env },
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`socket host exited with ${code}: ${stderr}`)));
  });
  return {
    path,
    child,
    stderr: () => stderr,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }
      await dir.cleanup();
    },
  };
}

export const stdioHostCommand = (env = ''): string =>
  `${env}${JSON.stringify(process.execPath)} ${JSON.stringify(hostScript)} --stdio`;

/** Timers that fire only when told to (the host's and client's `timers` seam). */
export class ManualTimers implements HostTimers {
  #pending = new Set<{ callback: () => void }>();
  setTimeout(callback: () => void): unknown {
    const handle = { callback };
    this.#pending.add(handle);
    return handle;
  }
  clearTimeout(handle: unknown): void {
    this.#pending.delete(handle as { callback: () => void });
  }
  /** Timers set and neither fired nor cleared. */
  get pending(): number {
    return this.#pending.size;
  }
  fireAll(): void {
    for (const handle of [...this.#pending]) {
      this.#pending.delete(handle);
      handle.callback();
    }
  }
}

/** A promise the test settles itself: a step the code under test waits on, or one it reports. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
