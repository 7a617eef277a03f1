import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import {
  connectRunner,
  startRunnerHost,
  type RunEvent,
  type RunOptions,
  type RunOutcome,
  type RunRequest,
  type RunnerClient,
  type RunnerHostOptions,
} from '@packwarden/runner-host';
import type { EngineRuntime, PackEngine } from '../src/index.js';

export const fixtures = new URL('./fixtures/', import.meta.url).pathname;

const temps: string[] = [];
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pw-engines-'));
  temps.push(dir);
  return dir;
}
export function cleanTemps(): void {
  temps.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true }));
}

export interface Session {
  client: RunnerClient;
  run(
    request: RunRequest,
    options?: RunOptions,
  ): Promise<{ events: RunEvent[]; outcome: RunOutcome }>;
  close(): Promise<void>;
}

/** A real runner host over in-memory streams, driven by the real client. */
export function session(engine: PackEngine, runtime: EngineRuntime, cancelGraceMs = 2000): Session {
  return hostSession(engine, runtime, { cancelGraceMs });
}

/**
 * A real runner host over in-memory streams, driven by the real client: `host` adds to the
 * host's options, `onWire` sees every byte the host writes to the driver.
 */
export function hostSession(
  engine: PackEngine,
  runtime: EngineRuntime,
  host: Pick<RunnerHostOptions<EngineRuntime>, 'cancelGraceMs' | 'logger'> = {},
  onWire?: (text: string) => void,
): Session {
  const toHost = new PassThrough();
  const toDriver = new PassThrough();
  if (onWire !== undefined) toDriver.on('data', (chunk: Buffer) => onWire(chunk.toString('utf8')));
  const running = startRunnerHost({
    engine,
    runtime,
    input: toHost,
    output: toDriver,
    ...host,
    kill: (request) => engine.kill?.(request),
  });
  const client = connectRunner({ input: toDriver, output: toHost });
  return {
    client,
    async run(request, options = {}) {
      const events: RunEvent[] = [];
      const handle = client.run(request, {
        ...options,
        onEvent: (event) => {
          events.push(event);
          options.onEvent?.(event);
        },
      });
      return { events, outcome: await handle.outcome };
    },
    async close() {
      await client.shutdown();
      await running.done;
    },
  };
}

export function textOf(events: RunEvent[]): string {
  return events.map((event) => (event.type === 'text' ? event.delta : '')).join('');
}

/** Running (a zombie waiting to be reaped by whoever adopted it counts as dead). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/**
 * Polls `check` until it holds or `timeoutMs` has passed, and says whether it held: for what a
 * test cannot be told about (a process it did not start ending), without a fixed sleep.
 */
export async function waitUntil(check: () => boolean, timeoutMs = 3000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return check();
}

/** A codex thread id, and a rollout whose last turn holds one call codex answered itself. */
export const CODEX_THREAD = '0199a0b1-0000-7000-8000-000000000001';

export const CODEX_ROLLOUT = [
  { type: 'event_msg', payload: { type: 'task_started', turn_id: 't1' } },
  {
    type: 'response_item',
    payload: {
      type: 'function_call',
      call_id: 'call-1',
      name: 'shell',
      arguments: '{"command":["cat","/etc/shadow"]}',
      turn_id: 't1',
    },
  },
  {
    type: 'response_item',
    payload: { type: 'function_call_output', call_id: 'call-1', output: 'refused', turn_id: 't1' },
  },
]
  .map((record) => JSON.stringify(record))
  .join('\n');

/** `$CODEX_HOME` with a day folder under `sessions/`, and where the thread's rollout goes. */
export function codexRolloutFolder(): { home: string; file: string } {
  const home = tempDir();
  const day = join(home, 'sessions', '2026', '12', '02');
  mkdirSync(day, { recursive: true });
  return { home, file: join(day, `rollout-2026-12-02T07-00-00-${CODEX_THREAD}.jsonl`) };
}
