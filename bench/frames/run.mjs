// Host→driver throughput and round-trip latency of @packwarden/runner-host, over stdio and a
// unix socket, next to a bare NDJSON writer/reader pair on the same transport.
//   node bench/frames/run.mjs            (builds the package first if dist/ is missing)
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const packageDir = fileURLToPath(new URL('../../packages/runner-host/', import.meta.url));
if (!existsSync(join(packageDir, 'dist/index.js'))) {
  execFileSync('npx', ['tsup', '--silent'], { cwd: packageDir, stdio: 'inherit' });
}
const { connectRunner } = await import('../../packages/runner-host/dist/index.js');
const peerScript = fileURLToPath(new URL('./peer.mjs', import.meta.url));

const SMALL = { count: 200_000, size: 24 };
const LARGE = { count: 4096, size: 16 * 1024 };
const PINGS = 2000;
const tmp = mkdtempSync(join(tmpdir(), 'bench-frames-'));

async function open(role, transport) {
  if (transport === 'stdio') {
    const child = spawn(process.execPath, [peerScript, role, 'stdio'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    return { input: child.stdout, output: child.stdin, close: () => child.kill() };
  }
  const path = join(tmp, `${role}.sock`);
  const child = spawn(process.execPath, [peerScript, role, 'socket', path], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise((resolve) => child.stdout.once('data', resolve));
  const socket = createConnection({ path, allowHalfOpen: true });
  await new Promise((resolve) => socket.once('connect', resolve));
  return { input: socket, output: socket, close: () => (socket.destroy(), child.kill()) };
}

// Median of three runs: the machine may be shared, and one run can be an outlier.
async function median3(measure) {
  const runs = [await measure(), await measure(), await measure()];
  return runs.sort((a, b) => a.perSecond - b.perSecond)[1];
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function benchHost(transport, role = 'host') {
  const channel = await open(role, transport);
  const client = connectRunner({ input: channel.input, output: channel.output });
  await client.welcome;
  const stream = async ({ count, size }) => {
    let bytes = 0;
    let frames = 0;
    const started = performance.now();
    const outcome = await client.run(
      { message: JSON.stringify({ count, size }) },
      {
        onEvent: (event) => {
          if (event.type === 'text') {
            frames += 1;
            bytes += event.delta.length;
          }
        },
      },
    ).outcome;
    const seconds = (performance.now() - started) / 1000;
    if (outcome.type !== 'result' || bytes !== count * size) throw new Error('bench run lost data');
    return { perSecond: count / seconds, mbPerSecond: bytes / 1e6 / seconds, frames };
  };
  await stream({ count: 20_000, size: 24 }); // warm-up
  const small = await median3(() => stream(SMALL));
  const large = await median3(() => stream(LARGE));
  const rtts = [];
  for (let i = 0; i < PINGS; i += 1) rtts.push(await client.ping());
  await client.shutdown();
  channel.close();
  return { small, large, rtts: rtts.sort((a, b) => a - b) };
}

async function benchRaw(transport) {
  const channel = await open('raw', transport);
  let pending = '';
  let onLine = () => {};
  channel.input.setEncoding('utf8');
  channel.input.on('data', (chunk) => {
    const lines = (pending + chunk).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) if (line !== '') onLine(JSON.parse(line));
  });
  const send = (frame) => channel.output.write(`${JSON.stringify(frame)}\n`);
  const stream = ({ count, size }) =>
    new Promise((resolve) => {
      let bytes = 0;
      const started = performance.now();
      onLine = (frame) => {
        if (frame.type === 'text') bytes += frame.delta.length;
        else if (frame.type === 'result') {
          const seconds = (performance.now() - started) / 1000;
          resolve({
            perSecond: count / seconds,
            mbPerSecond: bytes / 1e6 / seconds,
            frames: count,
          });
        }
      };
      send({ type: 'go', count, size });
    });
  await stream({ count: 20_000, size: 24 });
  const small = await median3(() => stream(SMALL));
  const large = await median3(() => stream(LARGE));
  const rtts = [];
  for (let i = 0; i < PINGS; i += 1) {
    rtts.push(
      await new Promise((resolve) => {
        const started = performance.now();
        onLine = () => resolve(performance.now() - started);
        send({ type: 'ping', id: i });
      }),
    );
  }
  channel.close();
  return { small, large, rtts: rtts.sort((a, b) => a - b) };
}

const fmt = (n, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const rows = [];
for (const transport of ['unix socket', 'stdio']) {
  const t = transport === 'stdio' ? 'stdio' : 'socket';
  const host = await benchHost(t);
  const unmerged = await benchHost(t, 'host-frames');
  const raw = await benchRaw(t);
  rows.push([
    transport,
    `small text (${SMALL.size} B) deltas/s`,
    fmt(host.small.perSecond),
    fmt(raw.small.perSecond),
    fmt(host.small.perSecond / raw.small.perSecond, 2),
    `merged: ${fmt(host.small.frames)} frames carried them`,
  ]);
  rows.push([
    transport,
    `small text (${SMALL.size} B) frames/s, unmerged`,
    fmt(unmerged.small.perSecond),
    fmt(raw.small.perSecond),
    fmt(unmerged.small.perSecond / raw.small.perSecond, 2),
    'coalesceDeltas: false, 1 frame per delta',
  ]);
  rows.push([
    transport,
    '16 KiB deltas MB/s',
    fmt(host.large.mbPerSecond, 1),
    fmt(raw.large.mbPerSecond, 1),
    fmt(host.large.mbPerSecond / raw.large.mbPerSecond, 2),
    '',
  ]);
  rows.push([
    transport,
    'round trip p50 / p99 (ms)',
    `${fmt(percentile(host.rtts, 50), 3)} / ${fmt(percentile(host.rtts, 99), 3)}`,
    `${fmt(percentile(raw.rtts, 50), 3)} / ${fmt(percentile(raw.rtts, 99), 3)}`,
    fmt(percentile(host.rtts, 50) / percentile(raw.rtts, 50), 2),
    'ratio: p50 host / raw',
  ]);
}
rmSync(tmp, { recursive: true, force: true });

const header = ['transport', 'measure', 'runner-host', 'raw NDJSON', 'host/raw', 'note'];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells) =>
  cells
    .map((c, i) => c.padEnd(widths[i]))
    .join('  ')
    .trimEnd();
console.log(
  `node ${process.version}; median of 3 runs of ${SMALL.count} small deltas and of ${LARGE.count} × 16 KiB; ${PINGS} pings`,
);
console.log(line(header));
console.log(line(widths.map((w) => '-'.repeat(w))));
for (const row of rows) console.log(line(row));
