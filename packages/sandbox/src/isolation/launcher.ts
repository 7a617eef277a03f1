/**
 * The first process inside every sandbox (docs/sandbox.md, "Confinement"): a POSIX shell script
 * that prepares two things and then `exec`s the real command, so the command keeps every file
 * descriptor its spawner gave it (an engine's fd-3 pipe included) and its exit status is bwrap's.
 *  - The environment: read from a one-use file that the host writes and the script deletes, so
 *    neither the host-side `bwrap` process (which a pack-controlled `LD_PRELOAD` would otherwise
 *    reach) nor any world-readable `/proc/<pid>/cmdline` carries the command's variables.
 *  - The proxy relay (when the sandbox has its own network namespace): a node process listening
 *    on 127.0.0.1:PORT of the sandbox's own loopback that pipes each connection, byte for byte,
 *    to the host proxy's unix socket, so `HTTP(S)_PROXY` works for clients that only speak TCP.
 *    It decides nothing: confined code can talk to that socket itself and meets the same
 *    host-side policy, so subverting the relay gains nothing. It starts with an empty
 *    environment and without the inherited descriptors 3–9, and the script waits until it
 *    listens (it closes its stdout then) before the command starts.
 * Descriptors above 9 were not given by the spawner (Node passes 0..n contiguously) but leaked
 * from the host process, which may hold pipes or sockets to host services: the script closes
 * them first. Only bash can name them; under a plain sh they stay open.
 * Passed to the shell with `-c` (bash reads a script file through fd 255, which the script
 * closes); the relay is a file. Kept as source text so `dist/` needs no extra files.
 */
export const LAUNCH_SCRIPT = `set -eu
env_file=$1 node=$2 port=$3
shift 3
if [ -n "\${BASH_VERSION:-}" ]; then
  for fd_path in /proc/self/fd/*; do
    fd=\${fd_path##*/}
    if [ "$fd" -gt 9 ]; then eval "exec $fd>&-"; fi
  done
fi
if [ "$port" != 0 ]; then
  ready=$(env -i "$node" /run/packwarden/relay.mjs "$port" /run/packwarden/proxy.sock \\
    </dev/null 2>/dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &)
  if [ "$ready" != ready ]; then
    echo "packwarden sandbox: the proxy relay did not start" >&2
    exit 125
  fi
fi
env_script=$(cat "$env_file")
rm -f "$env_file"
eval "$env_script"
exec "$@"
`;

export const RELAY_SOURCE = `import { closeSync, writeSync } from 'node:fs';
import { connect, createServer } from 'node:net';
const [port, socketPath] = process.argv.slice(2);
// Not stream.pipe(): it looks at process.stdout, and fd 1 is closed once the relay is ready.
function forward(from, to) {
  from.on('data', (chunk) => {
    if (!to.write(chunk)) from.pause();
  });
  to.on('drain', () => from.resume());
  from.on('end', () => to.end());
}
const server = createServer({ allowHalfOpen: true }, (inner) => {
  const outer = connect(socketPath);
  inner.on('error', () => outer.destroy());
  outer.on('error', () => inner.destroy());
  inner.on('close', () => outer.destroy());
  outer.on('close', () => inner.destroy());
  forward(inner, outer);
  forward(outer, inner);
});
server.on('error', () => process.exit(1));
server.listen(Number(port), '127.0.0.1', () => {
  writeSync(1, 'ready');
  closeSync(1);
});
`;

/** The loopback port inside the sandbox's network namespace where the relay listens. */
export const RELAY_PORT = 3128;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The command's environment as a script of `export NAME='value'` lines. A name the shell
 * cannot carry is refused rather than dropped: the command would otherwise run with less than
 * its caller asked for, silently.
 */
export function environmentScript(env: Record<string, string>): string | { badName: string } {
  let script = '';
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name)) return { badName: name };
    script += `export ${name}='${String(value).replaceAll("'", "'\\''")}'\n`;
  }
  return script;
}
