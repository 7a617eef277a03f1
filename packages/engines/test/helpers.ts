import { mkdtempSync, rmSync } from 'node:fs';
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
  const toHost = new PassThrough();
  const toDriver = new PassThrough();
  const host = startRunnerHost({
    engine,
    runtime,
    input: toHost,
    output: toDriver,
    cancelGraceMs,
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
      const outcome = await handle.outcome;
      return { events, outcome };
    },
    async close() {
      await client.shutdown();
      await host.done;
    },
  };
}

export function textOf(events: RunEvent[]): string {
  return events.map((event) => (event.type === 'text' ? event.delta : '')).join('');
}
