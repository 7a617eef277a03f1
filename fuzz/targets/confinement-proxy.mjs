// The confinement proxy's request parsing (packages/sandbox/README.md "Confinement"; the host
// side of docs/sandbox.md "Confinement"): mutated proxy requests, cut into random chunks.
// Promises checked:
// - RequestHeadReader's verdict does not depend on chunking (one piece and random pieces agree);
// - a real proxy on a unix socket answers every request with one of its statuses, or closes,
//   within a time bound after the client ends, and never crashes;
// - the upstream behind it is reached only for requests the proxy logged as allowed (counted
//   cumulatively), and the proxy allows only the allowed origin (a malformed or denied request never opens a connection).
// The built package is imported lazily, so a missing dist/ fails only this target.
import { mkdtempSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ANSWER_MS = 3000;
const STATUSES = new Set(['200', '400', '403', '431', '502']);
let world;

async function setUp() {
  const sandbox = await import('../../packages/sandbox/dist/index.js');
  let upstreamConnections = 0;
  const upstream = createServer((socket) => {
    upstreamConnections++;
    socket.on('error', () => {});
    socket.on('data', () => socket.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'));
  });
  await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstream.unref();
  const port = upstream.address().port;
  const allowed = [sandbox.parseAllowedOrigin(`http://127.0.0.1:${port}`)];
  const dir = mkdtempSync(join(tmpdir(), 'fuzz-proxy-'));
  const proxy = await sandbox.startHostProxy(join(dir, 'proxy.sock'), { allowed: () => allowed });
  return { sandbox, port, proxy, allowed: 0, upstreamConnections: () => upstreamConnections };
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
  }
  return out;
}

/** The head and every byte after it (what the proxy forwards), whatever the chunking. */
function headVerdict(sandbox, chunks) {
  const reader = new sandbox.RequestHeadReader();
  for (const [i, chunk] of chunks.entries()) {
    const step = reader.push(chunk);
    if (step.state === 'too-large') return 'too-large';
    if (step.state === 'complete') {
      const after = Buffer.concat([step.rest, ...chunks.slice(i + 1)]).toString('latin1');
      return `complete:${step.head}:${after}`;
    }
  }
  return 'need-more';
}

function exchange(path, chunks) {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    let answer = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the proxy did not answer within ${ANSWER_MS} ms`));
    }, ANSWER_MS);
    socket.on('data', (d) => {
      answer += d.toString('latin1');
      // A tunnel or a forwarded request stays open as long as the upstream wants: enough.
      if (answer.includes('\r\n\r\n')) socket.destroy();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(answer);
    });
    (async () => {
      for (const chunk of chunks) await new Promise((r) => socket.write(chunk, r));
      socket.end();
    })().catch(() => {});
  });
}

export const target = {
  name: 'confinement-proxy',
  arbitrary: (fc) =>
    fc.record({
      template: fc.constantFrom(
        'CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n',
        'GET http://127.0.0.1:{port}/v1/x?y=1 HTTP/1.1\r\nHost: a\r\nProxy-Connection: keep-alive\r\n\r\nbody',
        'CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n',
        'GET http://example.org/ HTTP/1.1\r\n\r\n',
        'POST http://[::1]:{port}/ HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc',
        '',
      ),
      mutations: fc.array(
        fc.record({
          kind: fc.constantFrom('flip', 'insert', 'delete', 'crlf'),
          at: fc.nat(),
          byte: fc.integer({ min: 0, max: 255 }),
        }),
        { maxLength: 6 },
      ),
      extra: fc.uint8Array({ maxLength: 64 }),
      cuts: fc.array(fc.nat(), { maxLength: 6 }),
    }),
  async check({ template, mutations, extra, cuts }) {
    world ??= await setUp();
    const { sandbox, port, proxy } = world;
    const bytes = Buffer.concat([
      mutate(Buffer.from(template.replaceAll('{port}', String(port)), 'latin1'), mutations),
      Buffer.from(extra),
    ]);
    const whole = headVerdict(sandbox, [bytes]);
    const cut = headVerdict(sandbox, split(bytes, cuts));
    if (whole !== cut) throw new Error(`head verdict depends on chunking: ${whole} vs ${cut}`);

    // The event log is bounded (oldest dropped), so new events are found after the last old one.
    const last = proxy.events.at(-1);
    const answer = await exchange(proxy.socketPath, split(bytes, cuts));
    const status = /^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1];
    if (answer !== '' && !STATUSES.has(status))
      throw new Error(`unexpected answer ${JSON.stringify(answer.slice(0, 80))}`);
    const fresh = proxy.events.slice(proxy.events.lastIndexOf(last) + 1);
    for (const event of fresh) {
      if (event.verdict !== 'allowed') continue;
      if (!event.target.endsWith(`127.0.0.1:${port}`)) throw new Error(`allowed ${event.target}`);
      world.allowed++;
    }
    // Cumulative: the upstream may count a connection a moment after the proxy decided.
    if (world.upstreamConnections() > world.allowed)
      throw new Error('the upstream was reached without an allowed decision');
  },
};
