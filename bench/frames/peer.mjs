// The far side of every benchmark, run as a child process:
//   node peer.mjs host (stdio | socket PATH)   the runner host (built package) with a bench engine
//   node peer.mjs host-frames …                 the same, with coalesceDeltas: false
//   node peer.mjs raw (stdio | socket PATH)    a bare NDJSON writer/echoer: the baseline
// A run/"go" message asks for `count` text deltas of `size` characters; a ping gets a pong.
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { startRunnerHost } from '../../packages/runner-host/dist/index.js';

const [role, transport, path] = process.argv.slice(2);

function delta(size, i) {
  const head = `${i} `;
  return head + 'x'.repeat(Math.max(0, size - head.length));
}

const benchEngine = {
  id: 'bench',
  displayName: 'Bench',
  async stream(message, _options, emitter) {
    const { count, size } = JSON.parse(message);
    for (let i = 0; i < count; i += 1) await emitter.text(delta(size, i));
  },
};

// `host-frames`: one frame per delta (no merging), to compare frames/s with the raw baseline.
function serveHost(input, output, endOutput) {
  const coalesceDeltas = role !== 'host-frames';
  return startRunnerHost({
    engine: benchEngine,
    runtime: {},
    input,
    output,
    endOutput,
    coalesceDeltas,
  }).done;
}

// The baseline: write lines as fast as the stream drains, split input on "\n", JSON.parse each.
function serveRaw(input, output) {
  let pending = '';
  let writing = Promise.resolve();
  const write = (line) =>
    output.write(line) ? undefined : new Promise((resolve) => output.once('drain', resolve));
  input.setEncoding('utf8');
  input.on('data', (chunk) => {
    const lines = (pending + chunk).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      if (line === '') continue;
      const frame = JSON.parse(line);
      if (frame.type === 'ping')
        output.write(`${JSON.stringify({ type: 'pong', id: frame.id })}\n`);
      else if (frame.type === 'go') {
        writing = writing.then(async () => {
          for (let i = 0; i < frame.count; i += 1) {
            const wait = write(
              `${JSON.stringify({ type: 'text', runId: 'r', seq: i + 2, delta: delta(frame.size, i) })}\n`,
            );
            if (wait) await wait;
          }
          output.write(
            `${JSON.stringify({ type: 'result', runId: 'r', stopReason: 'end_turn' })}\n`,
          );
        });
      }
    }
  });
  return new Promise((resolve) => input.on('end', resolve));
}

const serve = role === 'raw' ? serveRaw : serveHost;
if (transport === 'stdio') {
  await serve(process.stdin, process.stdout, false);
  process.exit(0);
} else {
  rmSync(path, { force: true });
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    socket.on('error', () => {});
    void serve(socket, socket, true).then(() => socket.destroy());
  });
  server.listen(path, () => process.stdout.write('listening\n'));
}
