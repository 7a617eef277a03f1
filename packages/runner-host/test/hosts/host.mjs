// The host the package's tests (and the conformance kit) drive: the built package, the scripted
// test engine, and a logger and kill hook that report on stderr.
//   node test/hosts/host.mjs --stdio
//   node test/hosts/host.mjs --socket PATH      (prints "listening" on stdout once bound)
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { startRunnerHost } from '../../dist/index.js';
import { createScriptedTestEngine } from '../../dist/conformance.js';

const cancelGraceMs = Number(process.env.RUNNER_HOST_CANCEL_GRACE_MS ?? 300);
const questionTimeoutMs = Number(process.env.RUNNER_HOST_QUESTION_TIMEOUT_MS ?? 60_000);

function hostOptions(input, output, endOutput) {
  return {
    engines: [
      createScriptedTestEngine(),
      createScriptedTestEngine({ id: 'second', displayName: 'Second' }),
    ],
    runtime: {},
    input,
    output,
    endOutput,
    cancelGraceMs,
    questionTimeoutMs,
    // Only the tests that prove the memory check can fail raise these.
    ...(process.env.RUNNER_HOST_HIGH_WATER_BYTES
      ? {
          outputHighWaterBytes: Number(process.env.RUNNER_HOST_HIGH_WATER_BYTES),
          maxBufferedOutputBytes: Number(process.env.RUNNER_HOST_HIGH_WATER_BYTES),
        }
      : {}),
    nativeSessionId: process.env.RUNNER_HOST_NATIVE_SESSION_ID,
    logger: (entry) => process.stderr.write(`log ${JSON.stringify(entry)}\n`),
    kill: (request) => process.stderr.write(`kill ${JSON.stringify(request)}\n`),
  };
}

const [mode, path] = process.argv.slice(2);
if (mode === '--stdio') {
  const host = startRunnerHost(hostOptions(process.stdin, process.stdout, false));
  const exit = await host.done;
  process.stderr.write(`done ${JSON.stringify(exit)}\n`);
  process.exit(0);
} else if (mode === '--socket' && path !== undefined) {
  rmSync(path, { force: true });
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    socket.on('error', () => {});
    void startRunnerHost(hostOptions(socket, socket, true)).done.then(() => socket.destroy());
  });
  server.listen(path, () => process.stdout.write('listening\n'));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
} else {
  process.stderr.write('usage: host.mjs --stdio | --socket PATH\n');
  process.exit(2);
}
