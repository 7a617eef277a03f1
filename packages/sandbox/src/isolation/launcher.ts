/**
 * The first process inside every sandbox (docs/sandbox.md, "Confinement"): a POSIX shell script
 * that prepares two things and then `exec`s the real command, so the command keeps every file
 * descriptor its spawner gave it (an engine's fd-3 pipe included) and its exit status is bwrap's.
 *  - The environment: sourced from a one-use file that the host writes and the relay (or the
 *    script, without a relay) deletes once read, saving a process on every turn, so
 *    neither the host-side `bwrap` process (which a pack-controlled `LD_PRELOAD` would otherwise
 *    reach) nor any world-readable `/proc/<pid>/cmdline` carries the command's variables.
 *  - The proxy relay (when the sandbox has its own network namespace): a process listening
 *    on 127.0.0.1:PORT of the sandbox's own loopback that pipes each connection, byte for byte,
 *    to the host proxy's unix socket, so `HTTP(S)_PROXY` works for clients that only speak TCP.
 *    It decides nothing: confined code can talk to that socket itself and meets the same
 *    host-side policy, so subverting the relay gains nothing. It starts with an empty
 *    environment and without the inherited descriptors 3–9, and the script waits until it
 *    listens (it closes its stdout then) before the command starts.
 * Descriptors above 9 were not given by the spawner (Node passes 0..n contiguously) but leaked
 * from the host process, which may hold pipes or sockets to host services: the script closes
 * them first. Only bash can name them; under a plain sh they stay open.
 * After the command's variables are sourced the script reads only its own `pw_*` variables,
 * which is why `environmentScript` refuses those names.
 * Passed to the shell with `-c` (bash reads a script file through fd 255, which the script
 * closes); the relay is a file. Kept as source text so `dist/` needs no extra files.
 */
export const LAUNCH_SCRIPT = `set -eu
PATH=/usr/bin:/bin
pw_env=$1 pw_relay=$2 pw_port=$3
shift 3
if [ -n "\${BASH_VERSION:-}" ]; then
  for pw_fd in /proc/self/fd/*; do
    pw_fd=\${pw_fd##*/}
    if [ "$pw_fd" -gt 9 ]; then eval "exec $pw_fd>&-"; fi
  done
fi
. "$pw_env"
if [ "$pw_port" = 0 ]; then
  /bin/rm -f "$pw_env"
else
  if [ "$pw_relay" = perl ]; then
    pw_ready=$(/usr/bin/env -i /usr/bin/perl /run/packwarden/relay.pl "$pw_port" /run/packwarden/proxy.sock \\
      "$pw_env" </dev/null 2>/dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &)
  else
    pw_ready=$(/usr/bin/env -i "$pw_relay" /run/packwarden/relay.mjs "$pw_port" /run/packwarden/proxy.sock \\
      "$pw_env" </dev/null 2>/dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &)
  fi
  if [ "$pw_ready" != ready ]; then
    echo "packwarden sandbox: the proxy relay did not start" >&2
    exit 125
  fi
fi
exec "$@"
`;

export const RELAY_SOURCE = `import { closeSync, rmSync, writeSync } from 'node:fs';
import { connect, createServer } from 'node:net';
const [port, socketPath, used] = process.argv.slice(2);
rmSync(used, { force: true });
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

/**
 * The same relay in Perl, used when `/usr/bin/perl` exists (perl-base is part of every
 * Debian and Ubuntu system): without a single module it starts in a few milliseconds where Node needs tens, and the relay's start-up is on every turn's critical
 * path. One process per connection.
 */
export const RELAY_PERL_SOURCE = `# No modules, not even strict/warnings or Socket: each costs start-up time on every turn.
# Linux constants: AF_UNIX 1, AF_INET 2, SOCK_STREAM 1, SOL_SOCKET 1, SO_REUSEADDR 2.
my ($port, $path, $used) = @ARGV;
unlink($used) if defined $used;
socket(my $listener, 2, 1, 0) or exit 1;
setsockopt($listener, 1, 2, 1);
bind($listener, pack('S n C4 x8', 2, $port, 127, 0, 0, 1)) or exit 1;
listen($listener, 128) or exit 1;
$SIG{CHLD} = 'IGNORE';
syswrite(STDOUT, 'ready');
close(STDOUT);
sub relay {
  my ($inner, $outer) = @_;
  my %open = (fileno($inner) => [$inner, $outer], fileno($outer) => [$outer, $inner]);
  while (%open) {
    my $wanted = '';
    vec($wanted, $_, 1) = 1 for keys %open;
    return if select(my $ready = $wanted, undef, undef, undef) < 0;
    for my $fd (keys %open) {
      next unless vec($ready, $fd, 1);
      my ($from, $to) = @{ $open{$fd} };
      my $read = sysread($from, my $buffer, 65536);
      if (!$read) {
        shutdown($to, 1);
        delete $open{$fd};
        next;
      }
      my $offset = 0;
      while ($offset < $read) {
        my $written = syswrite($to, $buffer, $read - $offset, $offset);
        return if !defined $written;
        $offset += $written;
      }
    }
  }
}
while (1) {
  if (!accept(my $inner, $listener)) {
    select(undef, undef, undef, 0.05);
    next;
  }
  else {
    my $pid = fork;
    if (defined $pid && $pid == 0) {
      close($listener);
      socket(my $outer, 1, 1, 0) or exit 0;
      connect($outer, pack('S Z*', 1, $path)) or exit 0;
      relay($inner, $outer);
      exit 0;
    }
    close($inner);
  }
}
`;

/** The loopback port inside the sandbox's network namespace where the relay listens. */
export const RELAY_PORT = 3128;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** The launch script's own variables: a command variable of that name would redirect it. */
const RESERVED = /^pw_/;

/**
 * The command's environment as a script of `export NAME='value'` lines. A name the shell
 * cannot carry is refused rather than dropped: the command would otherwise run with less than
 * its caller asked for, silently.
 */
export function environmentScript(env: Record<string, string>): string | { badName: string } {
  let script = '';
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name) || RESERVED.test(name)) return { badName: name };
    script += `export ${name}='${String(value).replaceAll("'", "'\\''")}'\n`;
  }
  return script;
}
