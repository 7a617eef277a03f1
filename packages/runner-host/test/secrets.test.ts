import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MAX_REMEMBERED_SECRETS,
  MAX_RUN_SECRETS,
  REDACTED,
  SecretSet,
  runSecretValues,
  type EngineEmitter,
  type RunnerEngine,
} from '../src/index.js';
import { runFrameSchema } from '../src/protocol.js';
import { packageDir } from './helpers.js';
import { InProcessHost, type Frame } from './in-process.js';

function engine(stream: RunnerEngine<unknown>['stream']): RunnerEngine<unknown> {
  return { id: 'e', displayName: 'E', stream };
}

function turnEnv(count: number, prefix: string): Record<string, string> {
  return Object.fromEntries(
    Array.from({ length: count }, (_, i) => [`V${i}`, `${prefix}-${String(i).padStart(4, '0')}`]),
  );
}

describe('secrets of a live run are pinned (issue 16.3)', () => {
  it('SecretSet: a pinned secret survives any number of later secrets; release keeps it remembered', () => {
    const secrets = new SecretSet();
    const release = secrets.pin(['sk-pinned-token-1']);
    for (let i = 0; i < MAX_REMEMBERED_SECRETS * 4; i += 1) secrets.add(`flood-value-${i}`);
    expect(secrets.scrubText('x sk-pinned-token-1 y')).toBe(`x ${REDACTED} y`);
    release();
    expect(secrets.scrubText('sk-pinned-token-1')).toBe(REDACTED);
    // Once released it is an ordinary remembered value: bounded like the rest.
    for (let i = 0; i < MAX_REMEMBERED_SECRETS; i += 1) secrets.add(`later-value-${i}`);
    expect(secrets.size).toBe(MAX_REMEMBERED_SECRETS);
    expect(secrets.scrubText('sk-pinned-token-1')).toBe('sk-pinned-token-1');
  });

  it('SecretSet.pin refuses more than MAX_RUN_SECRETS values with ERR_TOO_MANY_SECRETS and pins nothing', () => {
    const secrets = new SecretSet();
    const values = Object.values(turnEnv(MAX_RUN_SECRETS + 1, 'over-limit'));
    expect(() => secrets.pin(values)).toThrow(
      expect.objectContaining({ code: 'ERR_TOO_MANY_SECRETS' }),
    );
    expect(secrets.size).toBe(0);
    // Exactly the limit is accepted.
    secrets.pin(values.slice(0, MAX_RUN_SECRETS));
    expect(secrets.size).toBe(MAX_RUN_SECRETS);
  });

  it('refuses a run frame with 256 turnEnv values (too_many_secrets), never calls the engine, echoes nothing', async () => {
    let called = false;
    const host = new InProcessHost(
      engine(async () => {
        called = true;
      }),
    );
    await host.hello();
    const token = 'sk-flood-model-token-0001';
    host.send({
      type: 'run',
      runId: 'flood',
      message: 'hi',
      modelToken: token,
      turnEnv: turnEnv(256, 'env-secret'),
    });
    const terminal = await host.terminal('flood');
    expect(terminal).toMatchObject({
      type: 'failed',
      seq: 1,
      error: { code: 'too_many_secrets', retryable: false },
    });
    expect(host.runFrames('flood').map((f) => f.type)).toEqual(['failed']);
    expect(called).toBe(false);
    // The same connection still serves a normal run.
    host.send({ type: 'run', runId: 'ok', message: `echo ${token}` });
    expect(await host.terminal('ok')).toMatchObject({ type: 'result' });
    await host.close();
    expect(host.raw).not.toContain(token);
    expect(host.raw).not.toContain('env-secret-');
  });

  it("keeps an active run's modelToken redacted while other frames bring hundreds of secrets", async () => {
    const token = 'sk-live-run-token-424242';
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const host = new InProcessHost(
      engine(async (_m, options, emitter) => {
        await gate;
        await emitter.text(`text ${options.modelToken}`);
        await emitter.progress(`progress ${options.modelToken}`);
        emitter.log('warn', `log ${options.modelToken} `);
        throw new Error(`failed holding ${options.modelToken}`);
      }),
    );
    await host.hello();
    host.send({ type: 'run', runId: 'live', message: 'm', modelToken: token });
    await host.waitFor((f) => f.type === 'accepted' && f.runId === 'live');
    // 10 busy rejections of 60 fresh secrets each: 600 values, more than the remembered list.
    for (let i = 0; i < 10; i += 1) {
      host.send({ type: 'run', runId: `busy-${i}`, message: 'm', turnEnv: turnEnv(60, `b${i}x`) });
    }
    await host.terminal('busy-9');
    release();
    expect(await host.terminal('live')).toMatchObject({ type: 'failed' });
    await host.close();
    expect(host.raw).not.toContain(token);
    expect(host.raw).toContain(`text ${REDACTED}`);
    expect(host.raw).toContain(`failed holding ${REDACTED}`);
  });
});

// ---- issue 16.4: split secrets ------------------------------------------------------------------

type Op =
  | { kind: 'text' | 'thinking' | 'log'; value: string }
  | { kind: 'progress' | 'tool' | 'warning'; value: string };

const SECRET = 'sk-SPLIT-0123456789-tok';
// Filler drawn from the secret's own characters, so that partial matches happen all the time.
const filler = fc.string({ unit: fc.constantFrom(...'sk-SPLIT0123 '.split('')), maxLength: 6 });

/** Splits `value` at random points into non-empty pieces. */
const pieces = (value: string) =>
  fc.uniqueArray(fc.integer({ min: 1, max: value.length - 1 }), { maxLength: 6 }).map((cuts) => {
    const sorted = [...cuts].sort((a, b) => a - b);
    const out: string[] = [];
    let from = 0;
    for (const cut of [...sorted, value.length]) {
      out.push(value.slice(from, cut));
      from = cut;
    }
    return out;
  });

/** One stream's writes: filler, the secret in random pieces, filler, maybe the secret again. */
const streamWrites = fc
  .tuple(filler, pieces(SECRET), filler, fc.boolean(), pieces(SECRET))
  .map(([before, split, after, twice, split2]) => [
    ...(before === '' ? [] : [before]),
    ...split,
    ...(after === '' ? [] : [after]),
    ...(twice ? split2 : []),
  ]);

/** The three joinable streams, interleaved at random with random other frames. */
const scripts = fc
  .tuple(
    streamWrites,
    streamWrites,
    streamWrites,
    fc.array(
      fc.record({
        kind: fc.constantFrom('progress' as const, 'tool' as const, 'warning' as const),
        value: filler,
      }),
      { maxLength: 8 },
    ),
    fc.array(fc.nat(), { minLength: 40, maxLength: 40 }),
  )
  .map(([text, thinking, log, others, choices]) => {
    const queues: Op[][] = [
      text.map((value) => ({ kind: 'text' as const, value })),
      thinking.map((value) => ({ kind: 'thinking' as const, value })),
      log.map((value) => ({ kind: 'log' as const, value })),
      others,
    ];
    const ops: Op[] = [];
    let i = 0;
    while (queues.some((q) => q.length > 0)) {
      const open = queues.filter((q) => q.length > 0);
      const queue = open[(choices[i % choices.length] as number) % open.length] as Op[];
      ops.push(queue.shift() as Op);
      i += 1;
    }
    return ops;
  });

async function play(emitter: EngineEmitter, ops: readonly Op[]): Promise<void> {
  for (const op of ops) {
    if (op.kind === 'text') await emitter.text(op.value);
    else if (op.kind === 'thinking') await emitter.thinking(op.value);
    else if (op.kind === 'log') emitter.log('info', op.value);
    else if (op.kind === 'progress') await emitter.progress(`p${op.value}`);
    else if (op.kind === 'warning') await emitter.warning('w', `w${op.value}`);
    else await emitter.toolStart({ toolCallId: 't', name: `n${op.value}` });
  }
}

const joined = (frames: Frame[], type: string, field: string) =>
  frames
    .filter((f) => f.type === type)
    .map((f) => f[field] as string)
    .join('');

describe('split secrets never arrive whole (issue 16.4)', () => {
  it('property: no stream a driver joins (text, thinking, log) and no single frame holds the secret', async () => {
    await fc.assert(
      fc.asyncProperty(scripts, fc.boolean(), async (ops, coalesce) => {
        const host = new InProcessHost(
          engine(async (_m, _o, emitter) => play(emitter, ops)),
          { coalesceDeltas: coalesce },
        );
        await host.hello();
        host.send({ type: 'run', runId: 'r', message: 'm', modelToken: SECRET });
        await host.terminal('r');
        await host.close();
        const frames = host.runFrames('r');
        for (const line of host.raw.split('\n')) expect(line).not.toContain(SECRET);
        const text = joined(frames, 'text', 'delta');
        const thinking = joined(frames, 'thinking', 'delta');
        const logs = joined(
          host.frames.filter((f) => f.type === 'log' && f.runId === 'r'),
          'log',
          'message',
        );
        for (const stream of [text, thinking, logs]) expect(stream).not.toContain(SECRET);
        // Nothing else is lost or reordered within a stream: each is its writes, scrubbed.
        const written = (kind: Op['kind']) =>
          ops
            .filter((op) => op.kind === kind)
            .map((op) => op.value)
            .join('')
            .split(SECRET)
            .join(REDACTED);
        expect(text).toBe(written('text'));
        expect(thinking).toBe(written('thinking'));
        expect(logs).toBe(written('log'));
        // Run frames still carry seq 1, 2, 3 … without gaps.
        expect(frames.map((f) => f.seq)).toEqual(frames.map((_, i) => i + 1));
      }),
      { numRuns: 150 },
    );
  });

  it('regression: a secret split around a progress frame is not joined by the text deltas', async () => {
    const host = new InProcessHost(
      engine(async (_m, _o, emitter) => {
        await emitter.text('key: sk-SPLIT-01');
        await emitter.progress('working');
        await emitter.toolStart({ toolCallId: 't1', name: 'shell' });
        await emitter.thinking('sk-SPLIT');
        await emitter.text('23456789-tok done');
        await emitter.thinking('-0123456789-tok');
      }),
    );
    await host.hello();
    host.send({ type: 'run', runId: 'r', message: 'm', modelToken: SECRET });
    await host.terminal('r');
    await host.close();
    const frames = host.runFrames('r');
    expect(joined(frames, 'text', 'delta')).toBe(`key: ${REDACTED} done`);
    expect(joined(frames, 'thinking', 'delta')).toBe(REDACTED);
    // The held text goes out after the frames that interrupted it, still before the terminal.
    expect(frames.map((f) => f.type)).toEqual([
      'accepted',
      'text',
      'progress',
      'tool_start',
      'text',
      'thinking',
      'result',
    ]);
  });
});

describe('runSecretValues and SecretSet#addRun: one list of the secret fields of a run (README "Secrets")', () => {
  it('read exactly the run frame fields the README marks 🔒, and no other field of its schema', async () => {
    const readme = await readFile(join(packageDir, 'README.md'), 'utf8');
    const row = readme.split('\n').find((line) => line.startsWith('| `run` '));
    const locked = [...(row ?? '').matchAll(/`(\w+)\?[^`]*` 🔒/g)].map((match) => match[1]);
    expect(locked.sort()).toEqual(['gatewaySessionKey', 'modelToken', 'turnEnv']);

    // Every field of the schema as a string, then every field as a map: a field read as a
    // secret shows up in one of the two, whatever its kind.
    const fields = Object.keys(runFrameSchema.shape);
    const asValues = Object.fromEntries(fields.map((field) => [field, `value:${field}`]));
    const asMaps = Object.fromEntries(fields.map((field) => [field, { K: `map:${field}` }]));
    const read = [...runSecretValues(asValues), ...runSecretValues(asMaps)].map((value) =>
      value.replace(/^\w+:/, ''),
    );
    expect(read.sort()).toEqual(locked);
  });

  it('skip what is not a string on a frame that failed validation', () => {
    expect(
      runSecretValues({
        modelToken: 42,
        gatewaySessionKey: 'gw-session-key-1',
        turnEnv: { A: 'env-value-a', B: 7, C: null },
      }),
    ).toEqual(['gw-session-key-1', 'env-value-a']);
    expect(runSecretValues({ modelToken: 'sk-token', turnEnv: ['sk-in-an-array'] })).toEqual([
      'sk-token',
    ]);
    expect(runSecretValues({ turnEnv: null })).toEqual([]);
  });

  it("see an engine's hidden secret options; addRun scrubs each of them", async () => {
    const seen: { values: string[]; scrubbed: string }[] = [];
    const host = new InProcessHost(
      engine(async (_message, options) => {
        const secrets = new SecretSet();
        secrets.addRun(options);
        const all = `${options.modelToken} ${options.gatewaySessionKey} ${options.turnEnv?.A} ${options.turnEnv?.B} short`;
        seen.push({ values: runSecretValues(options), scrubbed: secrets.scrubText(all) });
      }),
    );
    await host.hello();
    host.send({
      type: 'run',
      runId: 'r',
      message: 'm',
      modelToken: 'sk-model-token-1',
      gatewaySessionKey: 'gw-session-key-1',
      turnEnv: { A: 'env-secret-a', B: 'short' },
    });
    expect(await host.terminal('r')).toMatchObject({ type: 'result' });
    await host.close();
    expect(seen).toEqual([
      {
        values: ['sk-model-token-1', 'gw-session-key-1', 'env-secret-a', 'short'],
        // Values under MIN_SECRET_LENGTH are not secret material.
        scrubbed: `${REDACTED} ${REDACTED} ${REDACTED} short short`,
      },
    ]);
  });
});
