import { SecretSet, type EngineEmitter } from '@packwarden/runner-host';
import type { PackEngine } from '@packwarden/engines';
import { describe, expect, test } from 'vitest';
import { modelOriginLease, SandboxError, sessionEngine } from '../src/index.js';

// One confinement, one proxy, shared by every socket session (docs/sandbox.md, "Socket mode"):
// the model origin it admits cannot be swapped while another session's turn uses it.

const emitter = {
  warning: async () => {},
} as unknown as EngineEmitter;

/** An engine whose turn lasts until `finish()` is called. */
function slowEngine() {
  let finish = () => {};
  const started: string[] = [];
  const engine: PackEngine = {
    id: 'slow',
    displayName: 'slow',
    stream: (message) =>
      new Promise<void>((resolve) => {
        started.push(message);
        finish = resolve;
      }),
  } as PackEngine;
  return { engine, started, finish: () => finish() };
}

describe('the model origin of a shared confinement', () => {
  test('a second session with another baseUrl is refused (ERR_MODEL_ORIGIN_BUSY) while the first turn runs; its engine never starts; after it ends the new origin is admitted', async () => {
    const admitted: string[] = [];
    const lease = modelOriginLease((origin) => void admitted.push(new URL(origin).origin));
    const a = slowEngine();
    const b = slowEngine();
    const runtime = { workspaceRoot: process.cwd(), stateDir: process.cwd() };
    const sessionA = sessionEngine(
      a.engine,
      () => Promise.resolve(a.engine),
      process.cwd(),
      new SecretSet(),
      {
        modelOrigin: lease,
      },
    );
    const sessionB = sessionEngine(
      b.engine,
      () => Promise.resolve(b.engine),
      process.cwd(),
      new SecretSet(),
      {
        modelOrigin: lease,
      },
    );
    const signal = new AbortController().signal;
    const turnA = sessionA.stream(
      'a',
      { runId: 'a', engineId: 'slow', baseUrl: 'https://model-a.example/v1' },
      emitter,
      runtime,
      signal,
    );
    await expect.poll(() => a.started).toEqual(['a']);
    const refused = await sessionB
      .stream(
        'b',
        { runId: 'b', engineId: 'slow', baseUrl: 'https://model-b.example' },
        emitter,
        runtime,
        signal,
      )
      .catch((error: unknown) => error);
    // A retryable wire error; its cause is the library's typed refusal.
    expect(refused).toMatchObject({ code: 'model_origin_busy', retryable: true });
    expect((refused as Error).cause).toBeInstanceOf(SandboxError);
    expect(((refused as Error).cause as SandboxError).code).toBe('ERR_MODEL_ORIGIN_BUSY');
    expect(b.started).toEqual([]);
    expect(admitted).toEqual(['https://model-a.example']);
    // The same origin may share the running turn's lease.
    const same = sessionB.stream(
      'b-same',
      { runId: 'b2', engineId: 'slow', baseUrl: 'https://model-a.example/other' },
      emitter,
      runtime,
      signal,
    );
    await expect.poll(() => b.started).toEqual(['b-same']);
    a.finish();
    await turnA;
    b.finish();
    await same;
    // No turn holds an origin any more: the next one replaces it.
    const c = sessionB.stream(
      'c',
      { runId: 'c', engineId: 'slow', baseUrl: 'https://model-b.example' },
      emitter,
      runtime,
      signal,
    );
    await expect.poll(() => b.started).toEqual(['b-same', 'c']);
    b.finish();
    await c;
    expect(admitted).toEqual(['https://model-a.example', 'https://model-b.example']);
  });
});

describe('the lease ends the admission', () => {
  test('the origin is revoked when the last turn holding it ends, so a later turn without a baseUrl reaches nothing', async () => {
    const log: string[] = [];
    const lease = modelOriginLease((origin) => {
      log.push(`admit ${new URL(origin).origin}`);
      return () => log.push(`revoke ${new URL(origin).origin}`);
    });
    const first = lease.acquire('http://127.0.0.1:9/v1');
    const second = lease.acquire('http://127.0.0.1:9');
    first();
    first();
    expect(log).toEqual(['admit http://127.0.0.1:9']);
    second();
    expect(log).toEqual(['admit http://127.0.0.1:9', 'revoke http://127.0.0.1:9']);
    const engine = slowEngine();
    const session = sessionEngine(
      engine.engine,
      () => Promise.resolve(engine.engine),
      process.cwd(),
      new SecretSet(),
      {
        modelOrigin: lease,
      },
    );
    const done = session.stream(
      'no base url',
      { runId: 'c', engineId: 'slow' },
      emitter,
      { workspaceRoot: process.cwd(), stateDir: process.cwd() },
      new AbortController().signal,
    );
    await expect.poll(() => engine.started).toEqual(['no base url']);
    engine.finish();
    await done;
    expect(log).toHaveLength(2);
  });
});
