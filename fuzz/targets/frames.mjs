// The frame codec and host (issue 16): arbitrary bytes and mutated valid frames, cut into random
// chunks. Promises checked (packages/runner-host/README.md "The protocol"):
// - the decoder reports only its typed codes and never throws;
// - the verdict does not depend on chunking (one chunk, random chunks and byte by byte agree);
// - memory stays bounded (the decoder never holds more than the cap plus one byte);
// - every decoded object parses as a driver frame without throwing;
// - a host fed the same chunks stops within a time bound after EOF, writes only JSON objects
//   of known types, and never sends a `modelToken` it was given.
import { PassThrough } from 'node:stream';
import {
  FrameDecoder,
  parseDriverFrame,
  startRunnerHost,
} from '../../packages/runner-host/dist/index.js';
import { hostFrameSchemas } from '../../packages/runner-host/dist/protocol.js';

const CAP = 512;
const CODES = new Set(['invalid_json', 'invalid_frame', 'frame_too_large', 'unterminated_frame']);
const SECRET_PREFIX = 'sk-fuzz-';
const HOST_STOP_MS = 5000;

const VALID_FRAMES = [
  { type: 'hello', protocols: [1], capabilities: { questions: true } },
  {
    type: 'run',
    runId: 'r1',
    message: 'hi é✓😀',
    modelToken: `${SECRET_PREFIX}model-token-1`,
    turnEnv: { API_KEY: `${SECRET_PREFIX}env-value-2`, SHORT: '1' },
    permissions: { fileAccess: 'workspace-write' },
  },
  { type: 'run', runId: 'r2', message: 'again', fileAccess: 'read-only' },
  { type: 'answer', questionId: 'q1', runId: 'r1', decline: true },
  { type: 'cancel', runId: 'r1' },
  { type: 'ping', id: 7 },
  { type: 'shutdown', reason: 'done' },
];

const mutation = (fc) =>
  fc.record({
    kind: fc.constantFrom('flip', 'insert', 'delete', 'crlf', 'newline', 'repeat'),
    at: fc.nat(),
    byte: fc.integer({ min: 0, max: 255 }),
  });

function mutate(bytes, mutations) {
  let out = Buffer.from(bytes);
  for (const { kind, at, byte } of mutations) {
    const i = out.length === 0 ? 0 : at % out.length;
    if (kind === 'flip' && out.length > 0) out[i] = byte;
    else if (kind === 'insert')
      out = Buffer.concat([out.subarray(0, i), Buffer.of(byte), out.subarray(i)]);
    else if (kind === 'delete') out = Buffer.concat([out.subarray(0, i), out.subarray(i + 1)]);
    else if (kind === 'crlf')
      out = Buffer.concat([out.subarray(0, i), Buffer.from('\r\n'), out.subarray(i)]);
    else if (kind === 'newline')
      out = Buffer.concat([out.subarray(0, i), Buffer.from('\n'), out.subarray(i)]);
    else if (kind === 'repeat') out = Buffer.concat([out, out.subarray(0, Math.min(i + 1, 4096))]);
  }
  return out;
}

function split(bytes, cuts) {
  const offsets = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out = [];
  let from = 0;
  for (const at of [...offsets, bytes.length]) {
    out.push(bytes.subarray(from, at));
    from = at;
  }
  return out;
}

function decode(chunks) {
  const events = [];
  let maxHeld = 0;
  const decoder = new FrameDecoder({
    maxFrameBytes: CAP,
    onFrame: (frame) => events.push({ frame }),
    onError: (error) => events.push({ error }),
  });
  for (const chunk of chunks) {
    decoder.push(chunk);
    maxHeld = Math.max(maxHeld, decoder.allocatedBytes);
  }
  decoder.end();
  return { events: JSON.stringify(events), list: events, maxHeld };
}

const echoEngine = {
  id: 'echo',
  displayName: 'Echo',
  async stream(message, options, emitter) {
    await emitter.text(`${message} ${options.modelToken ?? ''} ${options.turnEnv?.API_KEY ?? ''}`);
    emitter.log('info', `token ${options.modelToken ?? ''}`);
    await emitter.progress(String(options.permissions?.fileAccess));
  },
};

async function runHost(chunks) {
  const input = new PassThrough();
  const output = new PassThrough();
  const out = [];
  output.on('data', (c) => out.push(c));
  const { done } = startRunnerHost({
    engine: echoEngine,
    runtime: {},
    input,
    output,
    maxFrameBytes: CAP,
    cancelGraceMs: 100,
    flushTimeoutMs: 1000,
  });
  for (const chunk of chunks) input.write(chunk);
  input.end();
  let timer;
  const stopped = await Promise.race([
    done.then(() => true),
    new Promise((resolve) => (timer = setTimeout(() => resolve(false), HOST_STOP_MS))),
  ]);
  clearTimeout(timer);
  if (!stopped) throw new Error(`host did not stop within ${HOST_STOP_MS} ms of EOF`);
  return Buffer.concat(out).toString('utf8');
}

export const target = {
  name: 'frames',
  arbitrary: (fc) =>
    fc.record({
      bytes: fc.oneof(
        fc.uint8Array({ maxLength: 2048 }),
        fc
          .tuple(
            fc.array(fc.constantFrom(...VALID_FRAMES.keys()), { minLength: 1, maxLength: 8 }),
            fc.array(mutation(fc), { maxLength: 6 }),
            fc.constantFrom('\n', '\r\n'),
          )
          .map(
            ([picks, mutations, eol]) =>
              new Uint8Array(
                mutate(
                  Buffer.from(picks.map((i) => JSON.stringify(VALID_FRAMES[i]) + eol).join('')),
                  mutations,
                ),
              ),
          ),
      ),
      cuts: fc.array(fc.nat(), { maxLength: 16 }),
    }),
  async check({ bytes, cuts }) {
    const data = Buffer.from(bytes);
    const whole = decode([data]);
    const chunked = decode(split(data, cuts));
    const bytewise = decode(Array.from(data, (b) => Buffer.of(b)));
    if (chunked.events !== whole.events || bytewise.events !== whole.events) {
      throw new Error(
        `verdict depends on chunking:\n${whole.events}\n${chunked.events}\n${bytewise.events}`,
      );
    }
    for (const r of [whole, chunked, bytewise]) {
      if (r.maxHeld > CAP + 1) throw new Error(`decoder held ${r.maxHeld} bytes, cap ${CAP}`);
    }
    const secrets = new Set();
    for (const event of whole.list) {
      if (event.error && !CODES.has(event.error.code))
        throw new Error(`untyped decode error ${event.error.code}`);
      if (event.frame) {
        const parsed = parseDriverFrame(event.frame);
        if (!['frame', 'unknown', 'invalid'].includes(parsed.kind))
          throw new Error('parse result kind');
        const token = event.frame.modelToken;
        if (typeof token === 'string' && token.startsWith(SECRET_PREFIX) && token.length >= 6)
          secrets.add(token);
      }
    }
    const out = await runHost(split(data, cuts));
    for (const line of out.split('\n')) {
      if (line === '') continue;
      const frame = JSON.parse(line);
      if (
        frame === null ||
        typeof frame !== 'object' ||
        !Object.hasOwn(hostFrameSchemas, frame.type)
      ) {
        throw new Error(`host wrote an unknown frame: ${line.slice(0, 200)}`);
      }
      for (const secret of secrets) {
        if (line.includes(secret)) throw new Error(`host sent a modelToken: ${line.slice(0, 200)}`);
      }
    }
  },
};
