// Test helper: a host set up for escape attempts, and the evidence the host can see afterwards.
// Nothing here trusts what confined code reports: a verdict is a file that exists on the host,
// a connection a host listener accepted, a signal a host process counted, or a secret's bytes
// showing up anywhere the sandbox could write.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WrappableCommand } from '@packwarden/engines';

export const HOSTILE_PACK = fileURLToPath(new URL('../fixtures/hostile-pack', import.meta.url));
export const HOSTILE_CUSTOM_PACK = fileURLToPath(
  new URL('../fixtures/hostile-custom-pack', import.meta.url),
);

export interface Host {
  root: string;
  pack: string;
  workspace: string;
  state: string;
  /** A host folder outside everything the sandbox may see. */
  outside: string;
  token: string;
  canaryFile: string;
  outsideFile: string;
  hostTmpFile: string;
  secret: string;
  tcp: { port: number; connections: number; received: string };
  unix: { path: string; connections: number };
  abstract: { name: string; connections: number };
  allowed: { origin: string; requests: string[] };
  witness: ChildProcess;
  env(extra?: Record<string, string>): Record<string, string>;
  close(): Promise<void>;
}

async function listen(server: Server | HttpServer, where: number | string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if (typeof where === 'number') server.listen(where, '127.0.0.1', resolve);
    else server.listen(where, resolve);
  });
}

export async function setUpHost(fixture = HOSTILE_PACK): Promise<Host> {
  const root = await mkdtemp(join(tmpdir(), 'pw-hostile-'));
  const token = randomBytes(12).toString('hex');
  const pack = join(root, 'pack');
  const workspace = join(root, 'workspace');
  const state = join(root, 'state');
  const outside = join(root, 'outside');
  await cp(fixture, pack, { recursive: true });
  for (const dir of [workspace, state, outside]) await mkdir(dir);
  const canaryFile = join(outside, 'id_ed25519');
  await writeFile(canaryFile, `canary-${token}`);

  const tcp = { port: 0, connections: 0, received: '' };
  const tcpServer = createServer((socket) => {
    tcp.connections++;
    socket.on('data', (d) => (tcp.received += d.toString('latin1')));
    socket.on('error', () => {});
  });
  await listen(tcpServer, 0);
  tcp.port = (tcpServer.address() as { port: number }).port;

  const unix = { path: join(outside, 'agent.sock'), connections: 0 };
  const unixServer = createServer((socket) => {
    unix.connections++;
    socket.destroy();
  });
  await listen(unixServer, unix.path);

  const abstract = { name: `pw-hostile-${token}`, connections: 0 };
  const abstractServer = createServer((socket) => {
    abstract.connections++;
    socket.destroy();
  });
  await listen(abstractServer, `\0${abstract.name}`);

  const allowed = { origin: '', requests: [] as string[] };
  const allowedServer = createHttpServer((req, res) => {
    allowed.requests.push(req.url ?? '');
    res.end('model says hi');
  });
  await listen(allowedServer, 0);
  allowed.origin = `http://127.0.0.1:${(allowedServer.address() as { port: number }).port}`;

  const secret = `host-secret-${token}`;
  // A host process whose environment holds a secret and which counts the signals it gets.
  const witness = spawn(
    process.execPath,
    [
      '-e',
      "let n = 0; for (const s of ['SIGTERM','SIGINT','SIGHUP','SIGUSR1']) process.on(s, () => n++);" +
        "process.stdin.on('data', () => process.stdout.write(String(n) + '\\n'));",
    ],
    {
      stdio: ['pipe', 'pipe', 'ignore'],
      env: { PATH: '/usr/bin:/bin', HOSTILE_HOST_SECRET: secret },
    },
  );

  const hostTmpFile = join(tmpdir(), `pw-hostile-escape-${token}`);
  const outsideFile = join(outside, 'escaped.txt');
  return {
    root,
    pack,
    workspace,
    state,
    outside,
    token,
    canaryFile,
    outsideFile,
    hostTmpFile,
    secret,
    tcp,
    unix,
    abstract,
    allowed,
    witness,
    env: (extra = {}) => ({
      PATH: '/usr/bin:/bin',
      HOME: state,
      PACKWARDEN_PACK_DIR: pack,
      HOSTILE_CANARY_FILE: canaryFile,
      HOSTILE_OUTSIDE_FILE: outsideFile,
      HOSTILE_HOST_TMP_FILE: hostTmpFile,
      HOSTILE_TCP_PORT: String(tcp.port),
      HOSTILE_UNIX_SOCKET: unix.path,
      HOSTILE_ABSTRACT_NAME: abstract.name,
      HOSTILE_HOST_PID: String(witness.pid),
      HOSTILE_ALLOWED_ORIGIN: allowed.origin,
      HOSTILE_RUN_TOKEN: token,
      ...extra,
    }),
    async close() {
      witness.kill('SIGKILL');
      for (const server of [tcpServer, unixServer, abstractServer, allowedServer]) {
        if ('closeAllConnections' in server) server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
      await rm(hostTmpFile, { force: true });
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** The witness's own count of the signals it received (asked over its pipes, after the run). */
export function signalsSeen(witness: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    if (witness.exitCode !== null || witness.signalCode !== null) return resolve(-1);
    const onExit = () => resolve(-1);
    witness.once('exit', onExit);
    witness.stdout!.once('data', (chunk: Buffer) => {
      witness.off('exit', onExit);
      resolve(Number.parseInt(chunk.toString('utf8'), 10));
    });
    witness.stdin!.write('?\n');
  });
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Spawns a (wrapped) command the way engines do: its own process group, stdin piped. */
export function runCommand(command: WrappableCommand, stdin = ''): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command.file, [...command.args], {
      cwd: command.cwd,
      env: command.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

/** Every text the sandbox could have written to, decoded where the pack encodes. */
async function everythingWritten(host: Host, output: string): Promise<string> {
  const decoded = [...output.matchAll(/"message":"[\w-]+ ([A-Za-z0-9+/=]*)"/g)]
    .map((m) => Buffer.from(m[1]!, 'base64').toString('utf8'))
    .join('\n');
  let files = '';
  for (const dir of [host.workspace, host.state]) {
    for (const name of await readdir(dir, { recursive: true })) {
      files += await readFile(join(dir, String(name)), 'utf8').catch(() => '');
    }
  }
  return `${output}\n${decoded}\n${files}\n${host.tcp.received}`;
}

/** The escapes the host can see, by name: empty means every attempt was blocked. */
export async function escapes(host: Host, result: RunResult): Promise<string[]> {
  const seen: string[] = [];
  const written = await everythingWritten(host, `${result.stdout}\n${result.stderr}`);
  if (written.includes(`canary-${host.token}`)) seen.push('read-host-file');
  if (written.includes(host.secret)) seen.push('read-host-secret');
  if (existsSync(host.outsideFile)) seen.push('write-outside');
  if (existsSync(host.hostTmpFile)) seen.push('write-host-tmp');
  if ((await readFile(join(host.pack, 'AGENTS.md'), 'utf8')).includes('tampered'))
    seen.push('write-pack');
  if (host.tcp.connections > 0) seen.push('tcp-loopback');
  if (host.unix.connections > 0) seen.push('unix-socket');
  if (host.abstract.connections > 0) seen.push('abstract-socket');
  if ((await signalsSeen(host.witness)) !== 0) seen.push('signal-host');
  return seen;
}
