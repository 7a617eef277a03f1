/**
 * The first process inside every sandbox (docs/sandbox.md, "Confinement"). It runs with the
 * node binary of the host, as the confined user, and does two things before it becomes the
 * parent of the real command:
 *  - it reads the command's environment from a one-use file and deletes it, so neither the
 *    host-side `bwrap` process (which a pack-controlled `LD_PRELOAD` would otherwise reach) nor
 *    any `/proc/<pid>/cmdline` ever carries the environment or its secrets;
 *  - it listens on 127.0.0.1:PORT of the sandbox's own loopback and relays every connection,
 *    byte for byte, to the host proxy's unix socket, so `HTTP(S)_PROXY` works for clients that
 *    only speak TCP. It decides nothing: confined code could talk to the socket itself and meets
 *    the same host-side policy, so subverting the relay gains nothing.
 * Kept as source text so the package needs no extra file in `dist/`.
 */
export const LAUNCHER_SOURCE = String.raw`
import { readFileSync, unlinkSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { spawn } from 'node:child_process';
const [envFile, socketPath, portText, file, ...args] = process.argv.slice(2);
let env;
try {
  env = JSON.parse(readFileSync(envFile, 'utf8'));
  unlinkSync(envFile);
} catch (error) {
  process.stderr.write('packwarden sandbox: cannot read the command environment: ' + error.message + '\n');
  process.exit(125);
}
function start() {
  const child = spawn(file, args, { env, stdio: 'inherit' });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('error', (error) => {
    process.stderr.write('packwarden sandbox: cannot start ' + file + ': ' + error.code + '\n');
    process.exit(127);
  });
  child.on('exit', (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    }
    process.exit(code ?? 128);
  });
}
// Port 0: this sandbox shares the host network (isolation auto, degraded), so there is no relay.
if (portText === '0') start();
else {
const server = createServer({ allowHalfOpen: true }, (inner) => {
  const outer = connect(socketPath);
  inner.on('error', () => outer.destroy());
  outer.on('error', () => inner.destroy());
  inner.pipe(outer);
  outer.pipe(inner);
});
server.on('error', (error) => {
  process.stderr.write('packwarden sandbox: proxy relay failed: ' + error.message + '\n');
  process.exit(125);
});
server.listen(Number(portText), '127.0.0.1', start);
}
`;

/** The loopback port inside the sandbox's network namespace where the relay listens. */
export const RELAY_PORT = 3128;
