import { connectRunner } from '../client.js';
import type { ScriptStep } from './scripted-engine.js';
import type { ConformanceTarget, RawPeer, ReceivedFrame } from './peer.js';

export interface CaseContext {
  target: ConformanceTarget;
  /** Longest wait for an ordinary reply. */
  timeoutMs: number;
  /** Longest wait for a cancelled run whose engine ignores its signal (host grace + slack). */
  cancelTimeoutMs: number;
  /** Opens a fresh connection (stdio: a fresh host process), closed after the case. */
  open(options?: { recordRaw?: boolean }): Promise<RawPeer>;
}

export interface ConformanceCase {
  name: string;
  description: string;
  /** Stdio only, or last: cases that end the host process. */
  endsHost?: boolean;
  /** Returns an optional detail (e.g. a measurement) printed next to the case. */
  run(context: CaseContext): Promise<string | void>;
}

class CaseFailure extends Error {}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new CaseFailure(message);
}

function script(...steps: ScriptStep[]): string {
  return JSON.stringify({ script: steps });
}

let runCounter = 0;
function newRunId(label: string): string {
  runCounter += 1;
  return `${label}-${process.pid}-${runCounter}`;
}

const isTerminal = (f: ReceivedFrame) => f.type === 'result' || f.type === 'failed';

/** Checks the run's frames: seq 1..n without gaps, `accepted` first, one terminal, last. */
function checkRunShape(peer: RawPeer, runId: string, expectAccepted = true): ReceivedFrame {
  const frames = peer.runFrames(runId);
  check(frames.length > 0, `no frame for run ${runId}`);
  let expected = 1;
  for (const frame of frames) {
    if (frame.type === '(discarded)') {
      check(
        frame.firstSeq === expected,
        `seq gap in run ${runId}: expected ${expected}, got ${String(frame.firstSeq)}`,
      );
      expected = (frame.seq as number) + 1;
      continue;
    }
    check(
      frame.seq === expected,
      `seq gap in run ${runId}: expected ${expected}, got ${String(frame.seq)} (${frame.type})`,
    );
    expected += 1;
  }
  if (expectAccepted)
    check(
      frames[0]?.type === 'accepted',
      `first frame of ${runId} is ${frames[0]?.type}, not accepted`,
    );
  const terminals = frames.filter(isTerminal);
  check(terminals.length === 1, `run ${runId} has ${terminals.length} terminal frames`);
  const last = frames[frames.length - 1] as ReceivedFrame;
  check(isTerminal(last), `run ${runId} has ${last.type} after its terminal frame`);
  return last;
}

async function terminalOf(peer: RawPeer, runId: string, timeoutMs: number): Promise<ReceivedFrame> {
  await peer.waitFor(
    (f) => f.runId === runId && isTerminal(f),
    timeoutMs,
    `the terminal frame of ${runId}`,
  );
  return checkRunShape(
    peer,
    runId,
    !peer.runFrames(runId).some((f) => f.type === 'failed' && f.seq === 1),
  );
}

async function alive(peer: RawPeer, context: CaseContext, id: string): Promise<void> {
  await peer.send({ type: 'ping', id });
  await peer.waitFor((f) => f.type === 'pong' && f.id === id, context.timeoutMs, `pong ${id}`);
}

async function handshake(
  peer: RawPeer,
  context: CaseContext,
  capabilities?: Record<string, unknown>,
) {
  await peer.hello(capabilities);
  return peer.waitFor((f) => f.type === 'welcome', context.timeoutMs, 'welcome');
}

/** Sends a `run` of the scripted engine (with `fields` added to the frame); returns its id. */
async function startRun(
  peer: RawPeer,
  label: string,
  steps: ScriptStep[],
  fields: Record<string, unknown> = {},
): Promise<string> {
  const runId = newRunId(label);
  await peer.send({ type: 'run', runId, message: script(...steps), ...fields });
  return runId;
}

async function simpleRun(peer: RawPeer, context: CaseContext, label: string, steps: ScriptStep[]) {
  const runId = await startRun(peer, label, steps);
  return { runId, terminal: await terminalOf(peer, runId, context.timeoutMs) };
}

/** The run's `text` (or `thinking`) deltas joined, as a driver joins them. */
function deltasOf(peer: RawPeer, runId: string, type: 'text' | 'thinking' = 'text'): string {
  return peer
    .runFrames(runId)
    .filter((f) => f.type === type)
    .map((f) => f.delta as string)
    .join('');
}

/** A fresh connection that has had its `welcome`. */
async function ready(
  context: CaseContext,
  options: { recordRaw?: boolean; capabilities?: Record<string, unknown> } = {},
): Promise<RawPeer> {
  const peer = await (options.recordRaw === true
    ? context.open({ recordRaw: true })
    : context.open());
  await handshake(peer, context, options.capabilities);
  return peer;
}

/** Waits for the run's first frame of `type` (from frame index `from` on). */
function runFrame(
  peer: RawPeer,
  context: CaseContext,
  runId: string,
  type: string,
  what: string,
  from?: number,
): Promise<ReceivedFrame> {
  return peer.waitFor((f) => f.runId === runId && f.type === type, context.timeoutMs, what, from);
}

function errorCode(frame: ReceivedFrame): string | undefined {
  return (frame.error as { code?: string } | undefined)?.code;
}

/** Waits for the run's terminal frame and checks that it is `result{cancelled}`. */
async function expectCancelled(peer: RawPeer, runId: string, timeoutMs: number): Promise<void> {
  const terminal = await terminalOf(peer, runId, timeoutMs);
  check(terminal.type === 'result' && terminal.stopReason === 'cancelled', 'not result{cancelled}');
}

const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));

export const conformanceCases: ConformanceCase[] = [
  {
    name: 'frame split at every byte',
    description: 'hello, ping and run written one byte per write are parsed as whole frames',
    async run(context) {
      const peer = await context.open();
      const runId = newRunId('split');
      const bytes = Buffer.from(
        [
          { type: 'hello', protocols: [1], capabilities: { questions: true } },
          { type: 'ping', id: 'split' },
          { type: 'run', runId, message: script({ op: 'text', text: 'é✓😀' }) },
        ]
          .map((f) => `${JSON.stringify(f)}\n`)
          .join(''),
      );
      for (let i = 0; i < bytes.length; i += 1) {
        await peer.write(bytes.subarray(i, i + 1));
        await nextTick();
      }
      await peer.waitFor((f) => f.type === 'welcome', context.timeoutMs, 'welcome');
      await peer.waitFor((f) => f.type === 'pong' && f.id === 'split', context.timeoutMs, 'pong');
      const terminal = await terminalOf(peer, runId, context.timeoutMs);
      check(terminal.type === 'result', `expected result, got ${terminal.type}`);
      check(deltasOf(peer, runId) === 'é✓😀', 'multi-byte text was not reassembled');
      return `${bytes.length} one-byte writes`;
    },
  },
  {
    name: 'many frames in one chunk',
    description: 'hello and 500 pings in a single write get a welcome and 500 pongs, in order',
    async run(context) {
      const peer = await context.open();
      const frames: object[] = [{ type: 'hello', protocols: [1] }];
      for (let i = 0; i < 500; i += 1) frames.push({ type: 'ping', id: i });
      await peer.send(...frames);
      await peer.waitFor((f) => f.type === 'pong' && f.id === 499, context.timeoutMs, 'pong 499');
      const ids = peer.frames.filter((f) => f.type === 'pong').map((f) => f.id);
      check(ids.length === 500 && ids.every((id, i) => id === i), 'pongs missing or out of order');
    },
  },
  {
    name: 'CRLF line endings',
    description: 'frames terminated by \\r\\n are accepted',
    async run(context) {
      const peer = await context.open();
      await peer.write('{"type":"hello","protocols":[1]}\r\n{"type":"ping","id":"crlf"}\r\n');
      await peer.waitFor((f) => f.type === 'welcome', context.timeoutMs, 'welcome');
      await peer.waitFor((f) => f.type === 'pong' && f.id === 'crlf', context.timeoutMs, 'pong');
    },
  },
  {
    name: 'garbage lines are reported and skipped',
    description:
      'non-JSON, non-object, typeless, unknown-type and extra-field lines never end the session',
    async run(context) {
      const peer = await ready(context);
      await peer.write(
        [
          'this is not json',
          '{"type":"ping",',
          '[1,2,3]',
          '42',
          '{"no":"type"}',
          '{"type":"from_the_future","payload":{"a":1}}',
          '{"type":"cancel"}',
          '',
          '   ',
          '{"type":"ping","id":"after-garbage","extra":{"ignored":true}}',
          '',
        ].join('\n'),
      );
      await peer.waitFor(
        (f) => f.type === 'pong' && f.id === 'after-garbage',
        context.timeoutMs,
        'pong',
      );
      const reported = peer.frames.filter(
        (f) => f.type === 'log' && f.code === 'invalid_json',
      ).length;
      check(
        reported >= 2,
        `expected the 2 non-JSON lines reported as log{code:"invalid_json"}, got ${reported}`,
      );
      const { terminal } = await simpleRun(peer, context, 'garbage', [
        { op: 'text', text: 'still here' },
      ]);
      check(terminal.type === 'result', 'the session did not survive garbage');
    },
  },
  {
    name: 'U+2028, U+2029 and U+0085 are escaped',
    description: 'host output never contains the raw separators; input containing them is accepted',
    async run(context) {
      const peer = await ready(context, { recordRaw: true });
      const tricky = 'a\u2028b\u2029c\u0085d';
      await peer.write(`{"type":"ping","id":"${tricky}"}\n`);
      await peer.waitFor(
        (f) => f.type === 'pong' && f.id === tricky,
        context.timeoutMs,
        'pong with separators',
      );
      const { runId } = await simpleRun(peer, context, 'u2028', [{ op: 'text', text: tricky }]);
      check(deltasOf(peer, runId) === tricky, 'text with separators was altered');
      const raw = peer.raw.toString('utf8');
      check(!/[\u2028\u2029\u0085]/.test(raw), 'host wrote a raw U+2028/U+2029/U+0085');
    },
  },
  {
    name: '10 MiB frame in 1-byte to 64 KiB chunks',
    description: 'a 10 MiB ping written in chunks of 1 B … 64 KiB is parsed and answered quickly',
    async run(context) {
      const peer = await ready(context);
      const line = Buffer.from(
        `${JSON.stringify({ type: 'ping', id: 'big', pad: 'p'.repeat(10 * 1024 * 1024) })}\n`,
      );
      const sizes = [1, 2, 3, 7, 64, 1000, 4096, 16 * 1024, 65536];
      const started = Date.now();
      let offset = 0;
      for (let i = 0; offset < line.length; i += 1) {
        const size = sizes[i % sizes.length] as number;
        await peer.write(line.subarray(offset, offset + size));
        offset += size;
      }
      await peer.waitFor(
        (f) => f.type === 'pong' && f.id === 'big',
        context.timeoutMs,
        'pong for the 10 MiB frame',
      );
      const ms = Date.now() - started;
      check(ms < context.timeoutMs, `took ${ms} ms`);
      return `${ms} ms`;
    },
  },
  {
    name: 'oversize frame skipped, connection alive',
    description:
      'a line over 16 MiB is reported (log frame_too_large) and skipped; the next frame works',
    async run(context) {
      const peer = await ready(context);
      const pad = 'o'.repeat(16 * 1024 * 1024 + 16);
      await peer.write(`{"type":"ping","id":"too-big","pad":"${pad}"}\n`);
      await alive(peer, context, 'after-oversize');
      check(
        !peer.frames.some((f) => f.type === 'pong' && f.id === 'too-big'),
        'the oversize frame was answered',
      );
      check(
        peer.frames.some((f) => f.type === 'log' && f.code === 'frame_too_large'),
        'no log{code:"frame_too_large"}',
      );
    },
  },
  {
    name: 'handshake: no common version',
    description:
      'hello without a supported version gets fatal{code:"unsupported_protocol"} and the channel closes',
    async run(context) {
      const peer = await context.open();
      await peer.send({ type: 'hello', protocols: [999] });
      const fatal = await peer.waitFor((f) => f.type === 'fatal', context.timeoutMs, 'fatal');
      check(fatal.code === 'unsupported_protocol', `fatal code ${String(fatal.code)}`);
      check(await peer.waitClosed(context.timeoutMs), 'the host kept the channel open after fatal');
    },
  },
  {
    name: 'handshake: run before hello, version negotiation, repeated hello',
    description:
      'run before hello fails not_initialized; hello [1, 999] gets protocol 1; a second hello is ignored',
    async run(context) {
      const peer = await context.open();
      const early = newRunId('early');
      await peer.send({ type: 'run', runId: early, message: 'hi' });
      const failed = await peer.waitFor(
        (f) => f.runId === early,
        context.timeoutMs,
        'reply to an early run',
      );
      check(failed.type === 'failed', `expected failed, got ${failed.type}`);
      check(errorCode(failed) === 'not_initialized', 'code is not not_initialized');
      check(failed.seq === 1, 'seq of the rejection is not 1');
      // Offering a future version next to 1 must negotiate down to 1.
      await peer.send({ type: 'hello', protocols: [1, 999], capabilities: { questions: true } });
      const welcome = await peer.waitFor((f) => f.type === 'welcome', context.timeoutMs, 'welcome');
      check(welcome.protocol === 1, `welcome.protocol is ${String(welcome.protocol)}, not 1`);
      check(
        Array.isArray(welcome.engines) && welcome.engines.length > 0,
        'welcome lists no engine',
      );
      await peer.hello();
      await alive(peer, context, 'after-second-hello');
      check(
        peer.frames.filter((f) => f.type === 'welcome').length === 1,
        'a second welcome was sent',
      );
      check(!peer.frames.some((f) => f.type === 'fatal'), 'a second hello was fatal');
    },
  },
  {
    name: 'seq and the single terminal frame',
    description:
      'accepted is seq 1, every event counts up without gaps, one terminal frame ends the run',
    async run(context) {
      const peer = await ready(context);
      const { runId, terminal } = await simpleRun(peer, context, 'seq', [
        { op: 'text', text: 'one ', repeat: 3 },
        { op: 'thinking', text: 'hmm' },
        { op: 'tool', toolCallId: 't1', name: 'read', input: { path: 'a' }, output: 'content' },
        { op: 'progress', message: 'halfway' },
        { op: 'warning', code: 'w', message: 'careful' },
        { op: 'session', nativeSessionId: 'native-1' },
        { op: 'text', text: 'done' },
      ]);
      check(
        terminal.type === 'result' && terminal.stopReason === 'end_turn',
        'not result{end_turn}',
      );
      check(
        terminal.nativeSessionId === 'native-1',
        'terminal frame lacks the reported nativeSessionId',
      );
      const types = new Set(peer.runFrames(runId).map((f) => f.type));
      for (const t of ['thinking', 'tool_start', 'tool_end', 'progress', 'warning', 'session']) {
        check(types.has(t), `no ${t} frame`);
      }
      const { runId: second } = await simpleRun(peer, context, 'seq2', [{ op: 'text', text: 'x' }]);
      check(peer.runFrames(second)[0]?.seq === 1, 'the next run does not restart at seq 1');
    },
  },
  {
    name: 'run admission: busy and unknown engine',
    description:
      'a second run while one is active fails busy (retryable); an unknown engineId fails unknown_engine',
    async run(context) {
      const peer = await ready(context);
      const first = await startRun(peer, 'first', [{ op: 'wait', ms: 30_000 }]);
      await runFrame(peer, context, first, 'accepted', 'accepted');
      const second = newRunId('second');
      await peer.send({ type: 'run', runId: second, message: 'x' });
      const busy = await terminalOf(peer, second, context.timeoutMs);
      const error = busy.error as { code?: string; retryable?: boolean };
      check(
        busy.type === 'failed' && error.code === 'busy' && error.retryable === true,
        'not failed{busy,retryable}',
      );
      await peer.send({ type: 'cancel', runId: first });
      await terminalOf(peer, first, context.timeoutMs);
      const ghost = newRunId('ghost-engine');
      await peer.send({ type: 'run', runId: ghost, engineId: 'no-such-engine', message: 'x' });
      const unknown = await terminalOf(peer, ghost, context.timeoutMs);
      check(errorCode(unknown) === 'unknown_engine', 'not failed{unknown_engine}');
    },
  },
  {
    name: 'file access words',
    description:
      'permissions.fileAccess and a bare fileAccess take read-only, workspace-write and full (and the older none, read, write); the engine sees only the contract words; an unknown word fails invalid_frame',
    async run(context) {
      const peer = await ready(context);
      const requests: [Record<string, unknown>, string[]][] = [
        [{ permissions: { fileAccess: 'read-only' } }, ['read-only']],
        [{ permissions: { fileAccess: 'workspace-write' } }, ['workspace-write', 'read-only']],
        [{ permissions: { fileAccess: 'full' } }, ['full', 'workspace-write', 'read-only']],
        [{ fileAccess: 'read-only' }, ['read-only']],
        [{ fileAccess: 'workspace-write' }, ['workspace-write', 'read-only']],
        [{ permissions: { fileAccess: 'none' } }, ['none']],
        [{ permissions: { fileAccess: 'read' } }, ['read-only', 'none']],
        [{ permissions: { fileAccess: 'write' } }, ['workspace-write', 'read-only']],
        // Two fields that disagree never give more than the narrower asks.
        [{ permissions: { fileAccess: 'full' }, fileAccess: 'read-only' }, ['read-only']],
      ];
      for (const [fields, allowed] of requests) {
        const runId = await startRun(peer, 'access', [{ op: 'permissions' }], fields);
        const terminal = await terminalOf(peer, runId, context.timeoutMs);
        check(
          terminal.type === 'result',
          `${JSON.stringify(fields)} was refused: ${JSON.stringify(terminal.error)}`,
        );
        const text = deltasOf(peer, runId);
        const seen = (
          JSON.parse(text.replace(/^permissions:/, '')) as { fileAccess?: string } | null
        )?.fileAccess;
        // A host may narrow the request further (to what the pack declares), never widen it.
        check(
          seen === undefined || allowed.includes(seen) || seen === 'none',
          `${JSON.stringify(fields)} reached the engine as ${JSON.stringify(seen)}`,
        );
      }
      const bad = newRunId('access-bad');
      await peer.send({ type: 'run', runId: bad, message: 'x', fileAccess: 'root' });
      const refused = await terminalOf(peer, bad, context.timeoutMs);
      check(
        refused.type === 'failed' && errorCode(refused) === 'invalid_frame',
        'an unknown fileAccess word was not refused with invalid_frame',
      );
    },
  },
  {
    name: 'failing engine gives failed, never result',
    description:
      'an engine that throws ends its run with failed{error} carrying its code and retryable flag',
    async run(context) {
      const peer = await ready(context);
      const { terminal } = await simpleRun(peer, context, 'fail', [
        { op: 'text', text: 'partial' },
        { op: 'fail', message: 'model unavailable', code: 'model_unavailable', retryable: true },
      ]);
      const error = terminal.error as { code?: string; message?: string; retryable?: boolean };
      check(terminal.type === 'failed', `expected failed, got ${terminal.type}`);
      check(
        error.code === 'model_unavailable' && error.retryable === true,
        'error code/retryable lost',
      );
      check(error.message === 'model unavailable', 'error message lost');
    },
  },
  {
    name: 'cancel before accept',
    description: 'run and cancel in one write: the run ends with result{cancelled}',
    async run(context) {
      const peer = await ready(context);
      const runId = newRunId('early-cancel');
      await peer.send(
        { type: 'run', runId, message: script({ op: 'wait', ms: 30_000 }) },
        { type: 'cancel', runId },
      );
      await expectCancelled(peer, runId, context.timeoutMs);
    },
  },
  {
    name: 'cancel mid-stream',
    description: 'cancel while the engine streams ends the run with result{cancelled}',
    async run(context) {
      const peer = await ready(context);
      const runId = await startRun(peer, 'mid-cancel', [
        { op: 'text', text: 'streaming' },
        { op: 'wait', ms: 30_000 },
        { op: 'text', text: 'never' },
      ]);
      await runFrame(peer, context, runId, 'text', 'first text');
      await peer.send({ type: 'cancel', runId });
      await expectCancelled(peer, runId, context.timeoutMs);
      check(!deltasOf(peer, runId).includes('never'), 'the engine kept running after cancel');
    },
  },
  {
    name: 'cancel mid-question',
    description: 'cancel while a question waits resolves it as cancelled, then result{cancelled}',
    async run(context) {
      const peer = await ready(context);
      const runId = await startRun(peer, 'question-cancel', [
        { op: 'question', prompt: 'continue?' },
      ]);
      const question = await runFrame(peer, context, runId, 'question', 'question');
      await peer.send({ type: 'cancel', runId });
      await expectCancelled(peer, runId, context.timeoutMs);
      const resolved = peer.runFrames(runId).find((f) => f.type === 'question_resolved');
      check(
        resolved !== undefined && resolved.questionId === question.questionId,
        'no question_resolved for the question',
      );
      check(resolved.outcome === 'cancelled', `question outcome ${String(resolved.outcome)}`);
    },
  },
  {
    name: 'cancel after the end and for an unknown run',
    description: 'late and unknown cancels change nothing and never end the session',
    async run(context) {
      const peer = await ready(context);
      const { runId } = await simpleRun(peer, context, 'late', [{ op: 'text', text: 'done' }]);
      const count = peer.runFrames(runId).length;
      await peer.send({ type: 'cancel', runId }, { type: 'cancel', runId: 'no-such-run' });
      await alive(peer, context, 'after-cancels');
      check(
        peer.runFrames(runId).length === count,
        'a late cancel produced frames for an ended run',
      );
      check(
        !peer.frames.some((f) => f.runId === 'no-such-run' && f.type !== 'log'),
        'an unknown cancel produced run frames',
      );
    },
  },
  {
    name: 'cancel an engine that ignores its signal',
    description: 'after the host grace period the run still ends with result{cancelled}',
    async run(context) {
      const peer = await ready(context);
      const runId = await startRun(peer, 'stubborn', [{ op: 'text', text: 'x' }, { op: 'hang' }]);
      await runFrame(peer, context, runId, 'text', 'first text');
      const started = Date.now();
      await peer.send({ type: 'cancel', runId });
      await expectCancelled(peer, runId, context.cancelTimeoutMs);
      await alive(peer, context, 'after-stubborn');
      const { terminal: next } = await simpleRun(peer, context, 'after-stubborn', [
        { op: 'text', text: 'ok' },
      ]);
      check(next.type === 'result', 'the session cannot run again after a stuck engine');
      return `terminal after ${Date.now() - started} ms`;
    },
  },
  {
    name: 'question answered, declined, timed out, answered twice',
    description: 'each answer reaches the engine once; duplicates and unknown ids are ignored',
    async run(context) {
      const peer = await ready(context);
      const runId = await startRun(peer, 'questions', [
        { op: 'question', prompt: 'pick', options: ['red', 'blue'] },
        { op: 'question', prompt: 'decline me' },
        { op: 'question', prompt: 'ignore me', timeoutMs: 200 },
      ]);
      const first = await runFrame(peer, context, runId, 'question', 'question 1');
      check(JSON.stringify(first.options) === '["red","blue"]', 'question options lost');
      const answer = {
        type: 'answer',
        runId,
        questionId: first.questionId,
        selected: ['blue'],
        freeText: 'why not',
      };
      await peer.send(answer, answer);
      const index = peer.frames.indexOf(first) + 1;
      const second = await runFrame(peer, context, runId, 'question', 'question 2', index);
      await peer.send({ type: 'answer', runId, questionId: second.questionId, decline: true });
      const terminal = await terminalOf(peer, runId, context.timeoutMs);
      check(terminal.type === 'result', `expected result, got ${terminal.type}`);
      const outcomes = peer
        .runFrames(runId)
        .filter((f) => f.type === 'question_resolved')
        .map((f) => f.outcome);
      check(
        JSON.stringify(outcomes) === '["answered","declined","timeout"]',
        `outcomes ${JSON.stringify(outcomes)}`,
      );
      const text = deltasOf(peer, runId);
      check(
        text.includes('"selected":["blue"]') && text.includes('"freeText":"why not"'),
        'the engine did not get the answer',
      );
      check(
        text.includes('{"outcome":"declined"}') && text.includes('{"outcome":"timeout"}'),
        'outcomes not seen by engine',
      );
      await peer.send({ type: 'answer', runId, questionId: 'no-such-question', selected: [] });
      await alive(peer, context, 'after-answers');
    },
  },
  {
    name: 'names and ids over 4 KiB are cut, the run goes on',
    description:
      'a tool name and toolCallId of 5,000 characters arrive cut to 4 KiB (README "Caps"); the run ends in result',
    async run(context) {
      const peer = await ready(context);
      const runId = await startRun(peer, 'long-names', [
        { op: 'tool', toolCallId: 'i'.repeat(5000), name: 'n'.repeat(5000), output: 'ok' },
        { op: 'text', text: 'went on' },
      ]);
      const terminal = await terminalOf(peer, runId, context.timeoutMs);
      check(terminal.type === 'result', `expected result, got ${terminal.type}`);
      const tool = peer.runFrames(runId).find((f) => f.type === 'tool_start');
      check(tool !== undefined, 'no tool_start frame');
      for (const field of ['name', 'toolCallId'] as const) {
        const value = tool[field];
        check(
          typeof value === 'string' && value.length >= 4096 && value.length < 4200,
          `tool_start.${field} was not cut to 4 KiB (${typeof value === 'string' ? value.length : typeof value} characters)`,
        );
      }
      check(deltasOf(peer, runId) === 'went on', 'the text after the tool was lost');
    },
  },
  {
    name: 'a question with 256 options',
    description:
      'a question may carry 256 options (a host caps more): all reach the driver, and the one answered reaches the engine',
    async run(context) {
      const peer = await ready(context);
      const options = Array.from({ length: 256 }, (_, i) => `option ${i}`);
      const runId = await startRun(peer, 'many-options', [
        { op: 'question', prompt: 'which?', options },
      ]);
      const asked = await runFrame(peer, context, runId, 'question', 'the question');
      check(
        JSON.stringify(asked.options) === JSON.stringify(options),
        `the question carried ${Array.isArray(asked.options) ? asked.options.length : 'no'} of 256 options`,
      );
      await peer.send({
        type: 'answer',
        runId,
        questionId: asked.questionId,
        selected: ['option 255'],
      });
      const terminal = await terminalOf(peer, runId, context.timeoutMs);
      check(terminal.type === 'result', `expected result, got ${terminal.type}`);
      check(deltasOf(peer, runId).includes('"selected":["option 255"]'), 'the answer was lost');
    },
  },
  {
    name: 'questions auto-declined without the capability',
    description:
      'a driver that did not announce "questions" gets no question frame; the engine sees declined',
    async run(context) {
      const peer = await ready(context, { capabilities: {} });
      const { runId, terminal } = await simpleRun(peer, context, 'no-questions', [
        { op: 'question', prompt: 'ok?' },
      ]);
      check(terminal.type === 'result', `expected result, got ${terminal.type}`);
      check(!peer.runFrames(runId).some((f) => f.type === 'question'), 'a question frame was sent');
      check(
        deltasOf(peer, runId).includes('{"outcome":"declined"}'),
        'the engine did not see declined',
      );
    },
  },
  {
    name: 'shutdown and input EOF end runs cleanly',
    description:
      'shutdown mid-run gives result{cancelled}, bye and a closed channel; so does EOF (after an unterminated line, reported)',
    async run(context) {
      for (const how of ['shutdown', 'eof'] as const) {
        const peer = await ready(context);
        const runId = await startRun(peer, how, [{ op: 'wait', ms: 30_000 }]);
        await runFrame(peer, context, runId, 'accepted', 'accepted');
        if (how === 'shutdown') {
          await peer.send({ type: 'shutdown' });
        } else {
          // An unterminated last line must be reported, never parsed.
          await peer.write('{"type":"ping","id":"tail"}');
          peer.end();
        }
        const terminal = await terminalOf(peer, runId, context.timeoutMs);
        check(terminal.stopReason === 'cancelled', `${how}: not result{cancelled}`);
        await peer.waitFor((f) => f.type === 'bye', context.timeoutMs, `bye after ${how}`);
        check(await peer.waitClosed(context.timeoutMs), `${how}: the channel stayed open`);
        if (how === 'eof') {
          check(!peer.frames.some((f) => f.type === 'pong'), 'an unterminated line was parsed');
          check(
            peer.frames.some((f) => f.type === 'log' && f.code === 'unterminated_frame'),
            'no log{code:"unterminated_frame"} for the unterminated last line',
          );
        }
        await peer.close();
      }
    },
  },
  {
    name: 'terminal frame over 64 KiB arrives intact at exit',
    description:
      'a 100 KiB nativeSessionId in the terminal frame survives the host ending right after it',
    async run(context) {
      const peer = await ready(context);
      const big = `native-${'s'.repeat(100 * 1024)}-end`;
      const runId = await startRun(peer, 'big-terminal', [
        { op: 'session', nativeSessionId: big },
        { op: 'wait', ms: 30_000 },
      ]);
      await runFrame(peer, context, runId, 'session', 'session');
      peer.end();
      const terminal = await terminalOf(peer, runId, context.timeoutMs);
      check(
        terminal.nativeSessionId === big,
        'the terminal frame was cut or lost its nativeSessionId',
      );
      check(peer.decodeErrors.length === 0, `undecodable output: ${peer.decodeErrors.join('; ')}`);
      check(await peer.waitClosed(context.timeoutMs), 'the channel stayed open');
    },
  },
  {
    name: 'secrets absent from every frame',
    description:
      'an engine echoing modelToken, turnEnv and gatewaySessionKey everywhere leaks none of them',
    async run(context) {
      const peer = await ready(context, { recordRaw: true });
      const secrets = {
        modelToken: `sk-live-${process.pid}-"quoted"\\back/slash-TOKEN`,
        gatewaySessionKey: `gw-${process.pid}-SESSION-KEY-0123456789`,
        turnEnv: { API_KEY: `env-${process.pid}-SECRET-VALUE-abcdef` },
      };
      const runId = await startRun(peer, 'secrets', [{ op: 'leak' }], secrets);
      const terminal = await terminalOf(peer, runId, context.timeoutMs);
      check(terminal.type === 'failed', `expected failed, got ${terminal.type}`);
      await alive(peer, context, 'after-leak');
      await peer.send({ type: 'shutdown' });
      await peer.waitClosed(context.timeoutMs);
      const raw = peer.raw.toString('utf8');
      const values = [secrets.modelToken, secrets.gatewaySessionKey, secrets.turnEnv.API_KEY];
      for (const value of values) {
        for (const form of [value, JSON.stringify(value).slice(1, -1)]) {
          check(!raw.includes(form), `a secret reached the driver (${form.slice(0, 6)}…)`);
          check(!peer.stderr.includes(form), `a secret reached stderr (${form.slice(0, 6)}…)`);
        }
      }
      check(
        raw.includes('[redacted]'),
        'the engine leaked nothing that needed redaction: the case proves nothing',
      );
      const kinds = new Set(peer.runFrames(runId).map((f) => f.type));
      for (const t of [
        'text',
        'thinking',
        'tool_start',
        'tool_end',
        'progress',
        'warning',
        'session',
      ]) {
        check(kinds.has(t), `the leaking engine's ${t} frame is missing`);
      }
    },
  },
  {
    name: 'secrets keep frames whole',
    description:
      'turnEnv values that are protocol words (warning, result, cancelled) or numbers (100000) are scrubbed from text only: every frame stays valid JSON with its type, stopReason and numbers, and the run ends in result',
    async run(context) {
      const peer = await ready(context, { recordRaw: true });
      const key = `sk-${process.pid}-WORDS-0123456789`;
      const runId = await startRun(
        peer,
        'words',
        [
          { op: 'warning', code: 'notice', message: `warning: result ${key}` },
          {
            op: 'tool',
            toolCallId: 't1',
            name: 'count',
            input: { limit: 100000 },
            output: { tokens: 1000000 },
          },
          { op: 'text', text: 'the result is cancelled' },
        ],
        {
          turnEnv: { LEVEL: 'warning', MODE: 'result', STOP: 'cancelled', MAX: '100000', KEY: key },
        },
      );
      const terminal = await terminalOf(peer, runId, context.timeoutMs);
      check(peer.decodeErrors.length === 0, `undecodable output: ${peer.decodeErrors.join('; ')}`);
      check(
        terminal.type === 'result' && terminal.stopReason === 'end_turn',
        `expected result{end_turn}, got ${terminal.type}`,
      );
      const types = peer.runFrames(runId).map((f) => f.type);
      for (const t of ['warning', 'tool_start', 'tool_end', 'text'])
        check(types.includes(t), `the ${t} frame is missing or renamed (${types.join(', ')})`);
      const toolStart = peer.runFrames(runId).find((f) => f.type === 'tool_start');
      const toolEnd = peer.runFrames(runId).find((f) => f.type === 'tool_end');
      check(
        (toolStart?.input as { limit?: unknown } | undefined)?.limit === 100000 &&
          (toolEnd?.output as { tokens?: unknown } | undefined)?.tokens === 1000000,
        'a number was changed',
      );
      const raw = peer.raw.toString('utf8');
      check(!raw.includes(key), 'a secret reached the driver');
      check(!raw.includes('the result is cancelled'), 'the text kept a secret');
    },
  },
  {
    name: 'run ids: 256 characters, not 257',
    description:
      'a run whose runId has 256 characters runs; one of 257 is refused with log{invalid_frame} naming it, and no frame carries it or a cut copy',
    async run(context) {
      const peer = await ready(context);
      const longest = `${newRunId('long')}-`.padEnd(256, 'x');
      const tooLong = `${longest}+`;
      await peer.send({ type: 'run', runId: tooLong, message: script({ op: 'text', text: 'x' }) });
      await peer.waitFor(
        (f) => f.type === 'log' && f.code === 'invalid_frame' && f.runId === tooLong,
        context.timeoutMs,
        'log{invalid_frame} naming the 257-character runId',
      );
      await peer.send({ type: 'run', runId: longest, message: script({ op: 'text', text: 'ok' }) });
      const terminal = await terminalOf(peer, longest, context.timeoutMs);
      check(terminal.type === 'result', `the 256-character run ended ${terminal.type}`);
      check(
        peer.frames.every((f) => f.type === 'log' || f.runId !== tooLong),
        'a run frame carries the 257-character runId',
      );
      check(
        peer.runFrames(longest).filter((f) => f.type === 'accepted').length === 1,
        'the cut runId was run as well',
      );
    },
  },
  {
    name: 'secrets: too many refused, split ones stay hidden',
    description:
      'a run with more than 64 secret values fails too_many_secrets (seq 1, no accepted); a secret the engine splits around other frames never appears in the joined text or thinking deltas',
    async run(context) {
      const peer = await ready(context, { recordRaw: true });
      const flooded = newRunId('too-many');
      const floodToken = `sk-flood-${process.pid}-TOKEN-0123456789`;
      const turnEnv = Object.fromEntries(
        Array.from({ length: 300 }, (_, i) => [`V${i}`, `flood-value-${process.pid}-${i}`]),
      );
      await peer.send({
        type: 'run',
        runId: flooded,
        message: 'x',
        modelToken: floodToken,
        turnEnv,
      });
      const refused = await terminalOf(peer, flooded, context.timeoutMs);
      check(
        refused.type === 'failed' && errorCode(refused) === 'too_many_secrets' && refused.seq === 1,
        `a run with 300 turnEnv values was not refused with too_many_secrets: ${JSON.stringify(refused)}`,
      );
      check(peer.runFrames(flooded).length === 1, 'the refused run got more than its failed frame');
      const token = `sk-split-${process.pid}-SECRET-abcdefghij`;
      const half = Math.floor(token.length / 2);
      const steps: ScriptStep[] = [
        { op: 'text', text: `key=${token.slice(0, half)}` },
        { op: 'progress', message: 'between' },
        { op: 'thinking', text: token.slice(0, 3) },
        { op: 'tool', toolCallId: 't', name: 'n' },
        { op: 'text', text: `${token.slice(half)};` },
        { op: 'thinking', text: token.slice(3) },
      ];
      const split = await startRun(peer, 'split', steps, { modelToken: token });
      const terminal = await terminalOf(peer, split, context.timeoutMs);
      check(terminal.type === 'result', `expected result, got ${terminal.type}`);
      const text = deltasOf(peer, split);
      check(!text.includes(token), 'the text deltas join into the secret');
      check(
        !deltasOf(peer, split, 'thinking').includes(token),
        'the thinking deltas join into the secret',
      );
      check(text === 'key=[redacted];', `text lost or changed: ${text}`);
      const raw = peer.raw.toString('utf8');
      check(!raw.includes(token) && !raw.includes(floodToken), 'a secret reached the driver');
    },
  },
  {
    name: 'driver stops reading while the engine emits 100 MB',
    description:
      'host memory stays bounded while the driver does not read; all text arrives afterwards',
    async run(context) {
      const peer = await ready(context);
      const bytes = 100 * 1000 * 1000;
      peer.discardType = 'text';
      const runId = await startRun(peer, 'flood', [{ op: 'flood', bytes, chunkBytes: 16 * 1024 }]);
      await runFrame(peer, context, runId, '(discarded)', 'first text');
      peer.pause();
      await new Promise((resolve) => setTimeout(resolve, 1500));
      peer.resume();
      const terminal = await terminalOf(peer, runId, 60_000);
      check(
        terminal.type === 'result' && terminal.stopReason === 'end_turn',
        `expected result{end_turn}, got ${terminal.type}`,
      );
      check(
        peer.discardedBytes === bytes,
        `received ${peer.discardedBytes} of ${bytes} text bytes`,
      );
      const report = peer
        .runFrames(runId)
        .find((f) => f.type === 'progress' && String(f.message).startsWith('memory:'));
      check(report !== undefined, 'no memory report from the engine');
      const memory = JSON.parse(String(report.message).slice('memory:'.length)) as {
        rssBefore: number;
        rssMax: number;
        heapBefore: number;
        heapMax: number;
        gc: boolean;
      };
      // Holding the flood would retain well over 100 MiB; pushing back retains a few MiB. The
      // heap is sampled after full collections (RSS also counts uncollected garbage, which
      // depends on how busy the machine is, so it is reported, not judged).
      const limit = 32 * 1024 * 1024;
      const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
      const heapGrowth = memory.heapMax - memory.heapBefore;
      const rssGrowth = memory.rssMax - memory.rssBefore;
      check(memory.gc, 'the scripted engine could not run a full collection in the host');
      check(
        heapGrowth < limit,
        `host retained ${mib(heapGrowth)} more heap while streaming 100 MB`,
      );
      return `host heap retained +${mib(heapGrowth)} (RSS +${mib(rssGrowth)}), ${peer.discardedFrames} text frames`;
    },
  },
  {
    name: 'host killed mid-run',
    description: 'the driver client turns a dead host into failed{code:"host_lost"}',
    endsHost: true,
    async run(context) {
      const peer = await context.open();
      const client = connectRunner({
        input: peer.inputStream,
        output: peer.outputStream,
        idleTimeoutMs: context.timeoutMs,
      });
      await client.welcome;
      const steps: ScriptStep[] = [
        { op: 'text', text: 'working' },
        { op: 'wait', ms: 500 },
      ];
      const target = context.target;
      // Who kills the host: over stdio the kit (it started the host); over a socket the harness's
      // killHost hook, or else the engine's crash step (only a host running its engine in-process).
      let kill: (() => void | Promise<void>) | undefined;
      if ('stdio' in target) kill = () => void peer.child?.kill('SIGKILL');
      else if (target.killHost !== undefined) kill = target.killHost;
      else steps.push({ op: 'crash' });
      steps.push({ op: 'wait', ms: 30_000 });
      let killed = false;
      let killFailed: unknown;
      const handle = client.run(
        { message: script(...steps) },
        {
          onEvent: (event) => {
            if (event.type === 'text' && kill !== undefined && !killed) {
              killed = true;
              void Promise.resolve()
                .then(kill)
                .catch((error: unknown) => {
                  killFailed = error;
                });
            }
          },
        },
      );
      const outcome = await handle.outcome;
      check(killFailed === undefined, `killHost failed: ${String(killFailed)}`);
      check(
        outcome.type === 'failed' && outcome.error.code === 'host_lost',
        `expected failed{host_lost}, got ${JSON.stringify(outcome).slice(0, 200)}`,
      );
      check(outcome.seq >= 2, 'the synthesised failed frame does not continue the seq');
    },
  },
];
