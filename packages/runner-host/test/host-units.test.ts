import { describe, expect, it } from 'vitest';
import { EngineLifecycle } from '../src/engine-lifecycle.js';
import { MAX_ID_CHARS } from '../src/frames.js';
import { HostHandshake } from '../src/host-handshake.js';
import { HOST_LIMITS } from '../src/host-limits.js';
import { MAX_RUN_SECRETS, SecretSet, type RunFrame, type RunnerEngine } from '../src/index.js';
import { RunAdmission } from '../src/run-admission.js';
import { ManualTimers, deferred } from './helpers.js';

const engine = (id: string, extra: Partial<RunnerEngine<string>> = {}): RunnerEngine<string> => ({
  id,
  displayName: id.toUpperCase(),
  stream: async () => {},
  ...extra,
});

describe('HostHandshake', () => {
  const handshake = () => new HostHandshake([engine('a'), engine('b')], { name: 'test-host' });

  it('welcomes the first hello with the highest common version and lists the engines', () => {
    const h = handshake();
    expect(
      h.hello({ type: 'hello', protocols: [1, 999], capabilities: { questions: true } }),
    ).toEqual({
      kind: 'welcome',
      frame: {
        type: 'welcome',
        protocol: 1,
        host: { name: 'test-host' },
        engines: [
          { id: 'a', displayName: 'A' },
          { id: 'b', displayName: 'B' },
        ],
        capabilities: { questions: true },
      },
    });
    expect(h.phase).toBe('ready');
    expect(h.driverAnswersQuestions).toBe(true);
    expect(h.hello({ type: 'hello', protocols: [1] })).toEqual({ kind: 'repeated' });
    expect(h.driverAnswersQuestions).toBe(true);
  });

  it('answers a hello without a common version with fatal unsupported_protocol', () => {
    const h = handshake();
    expect(h.hello({ type: 'hello', protocols: [] })).toMatchObject({
      kind: 'fatal',
      frame: { type: 'fatal', code: 'unsupported_protocol', message: /driver offered none/ },
    });
    expect(h.phase).toBe('awaiting_hello');
    expect(h.driverAnswersQuestions).toBe(false);
  });

  it('takes the questions capability only when announced, and stops for good', () => {
    const h = handshake();
    h.hello({ type: 'hello', protocols: [1] });
    expect(h.driverAnswersQuestions).toBe(false);
    h.stop();
    expect(h.phase).toBe('stopping');
    expect(h.hello({ type: 'hello', protocols: [1] })).toEqual({ kind: 'repeated' });
  });
});

describe('RunAdmission', () => {
  const token = 'sk-admission-secret';
  const run = (runId: string, extra: Partial<RunFrame> = {}): RunFrame => ({
    type: 'run',
    runId,
    message: 'm',
    modelToken: token,
    ...extra,
  });
  const setup = () => {
    const secrets = new SecretSet();
    const a = engine('a');
    const admission = new RunAdmission(secrets, new Map([['a', a]]), a);
    const learned = (value: string) => secrets.scrubText(value) !== value;
    return { admission, secrets, a, learned };
  };
  const ready = { initialized: true, activeRunId: undefined };

  it('starts a run on the default engine with its secrets, then ignores its id', () => {
    const { admission, a, learned } = setup();
    expect(admission.admit(run('r1', { turnEnv: { K: 'env-value-1' } }), ready)).toEqual({
      kind: 'start',
      engine: a,
      runSecrets: [token, 'env-value-1'],
    });
    // Pinned by the run supervisor, not learned here.
    expect(learned(token)).toBe(false);
    expect(admission.seen('r1')).toBe(true);
    expect(admission.admit(run('r1'), ready)).toEqual({
      kind: 'ignore',
      warning: { code: 'duplicate_run', message: 'runId r1 was already used; frame ignored' },
    });
    expect(learned(token)).toBe(true);
  });

  it('refuses a run before hello without remembering its id, having learned its secrets', () => {
    const { admission, learned } = setup();
    expect(admission.admit(run('r1'), { initialized: false, activeRunId: undefined })).toEqual({
      kind: 'reject',
      error: { code: 'not_initialized', message: 'send "hello" before "run"', retryable: false },
    });
    expect(learned(token)).toBe(true);
    expect(admission.seen('r1')).toBe(false);
    expect(admission.admit(run('r1'), ready).kind).toBe('start');
  });

  it('refuses busy (retryable) and unknown engines, learning the secrets first', () => {
    const { admission, learned } = setup();
    expect(admission.admit(run('r2'), { initialized: true, activeRunId: 'r1' })).toEqual({
      kind: 'reject',
      error: { code: 'busy', message: 'run r1 is still active in this session', retryable: true },
    });
    expect(learned(token)).toBe(true);
    expect(admission.admit(run('r3', { engineId: 'zz' }), ready)).toEqual({
      kind: 'reject',
      error: { code: 'unknown_engine', message: 'no engine "zz"; available: a', retryable: false },
    });
    expect(admission.seen('r2') && admission.seen('r3')).toBe(true);
  });

  it('refuses too many secrets, learning only the two named ones', () => {
    const { admission, learned } = setup();
    const turnEnv = Object.fromEntries(
      Array.from({ length: MAX_RUN_SECRETS }, (_, i) => [`K${i}`, `env-value-${i}`]),
    );
    const frame = run('r1', { turnEnv, gatewaySessionKey: 'gw-admission-key' });
    expect(admission.admit(frame, ready)).toMatchObject({
      kind: 'reject',
      error: { code: 'too_many_secrets', retryable: false },
    });
    expect([learned(token), learned('gw-admission-key'), learned('env-value-0')]).toEqual([
      true,
      true,
      false,
    ]);
    expect(admission.admit(frame, ready)).toEqual({ kind: 'ignore' });
  });

  it('names the run of an invalid run frame once, when it has a usable id', () => {
    const { admission, learned } = setup();
    expect(admission.admitInvalid({ runId: 'r1', message: 42, modelToken: token })).toEqual({
      kind: 'refuse',
      runId: 'r1',
    });
    expect(learned(token)).toBe(true);
    expect(admission.admitInvalid({ runId: 'r1' })).toEqual({ kind: 'log' });
    expect(admission.admitInvalid({ runId: 7 })).toEqual({ kind: 'log' });
  });

  it('never cuts an id that no run frame can carry: logs it as sent, and keeps the shorter id free', () => {
    const { admission, learned } = setup();
    const long = 'x'.repeat(MAX_ID_CHARS + 1);
    expect(admission.admitInvalid({ runId: long, modelToken: token })).toEqual({
      kind: 'log',
      runId: long,
    });
    // The log echoes the driver's text: its secrets are learned first.
    expect(learned(token)).toBe(true);
    expect(admission.admitInvalid({ runId: '' })).toEqual({ kind: 'log', runId: '' });
    // Over the host's cap on ids it sends: logged without the id.
    expect(admission.admitInvalid({ runId: 'y'.repeat(HOST_LIMITS.nameFieldChars + 1) })).toEqual({
      kind: 'log',
    });
    const prefix = long.slice(0, MAX_ID_CHARS);
    expect(admission.seen(prefix)).toBe(false);
    expect(admission.admit(run(prefix), ready)).toMatchObject({ kind: 'start' });
  });
});

describe('EngineLifecycle', () => {
  const lifecycle = (engines: RunnerEngine<string>[], disposeEngines = true) => {
    const timers = new ManualTimers();
    const logs: string[] = [];
    const unit = new EngineLifecycle(engines, {
      runtime: 'rt',
      hostSessionId: 'session-1',
      disposeEngines,
      graceMs: 100,
      timers,
      log: (_level, message, code) => void logs.push(`${code ?? '-'}: ${message}`),
    });
    return { unit, timers, logs };
  };

  it("holds the engine's next run until its maintenance settles, and logs a failure", async () => {
    const release = deferred();
    const calls: string[] = [];
    const a = engine('a', {
      onMaintenance: async (event, runtime) => {
        calls.push(`${event.runId}:${runtime}`);
        await release.promise;
        throw new Error('tidy failed');
      },
    });
    const { unit, logs } = lifecycle([a, engine('b')]);
    unit.afterRun(a, 'r1');
    let ready = false;
    const waiting = unit.ready('a').then(() => (ready = true));
    await expect(unit.ready('b')).resolves.toBeUndefined();
    expect(ready).toBe(false);
    release.resolve();
    await waiting;
    await unit.settled();
    expect(calls).toEqual(['r1:rt']);
    expect(logs).toEqual(['engine_error: maintenance of engine a failed: tidy failed']);
  });

  it('starts no maintenance once the session is ending', async () => {
    const calls: string[] = [];
    const a = engine('a', { onMaintenance: () => void calls.push('maintenance') });
    const { unit } = lifecycle([a]);
    unit.stopMaintenance();
    unit.afterRun(a, 'r1');
    await unit.settled();
    expect(calls).toEqual([]);
  });

  it('ends the session for every engine, disposing only the engines it owns', async () => {
    const calls: string[] = [];
    const make = (id: string) =>
      engine(id, {
        endSession: (sessionId, runtime) => void calls.push(`${id}:end:${sessionId}:${runtime}`),
        dispose: () => void calls.push(`${id}:dispose`),
      });
    await lifecycle([make('a'), make('b')]).unit.end();
    expect(calls).toEqual(['a:end:session-1:rt', 'b:end:session-1:rt', 'a:dispose', 'b:dispose']);
    calls.length = 0;
    await lifecycle([make('a')], false).unit.end();
    expect(calls).toEqual(['a:end:session-1:rt']);
  });

  it('gives up on an engine that never finishes disposing after graceMs', async () => {
    const stuck = engine('stuck', { dispose: () => new Promise<void>(() => {}) });
    const { unit, timers } = lifecycle([stuck]);
    let ended = false;
    const ending = unit.end().then(() => (ended = true));
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(ended).toBe(false);
    timers.fireAll();
    await ending;
    expect(timers.pending).toBe(0);
  });
});
