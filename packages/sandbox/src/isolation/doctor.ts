import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import type { Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConfinement } from './confinement.js';
import { ISOLATION_LIMITS } from './limits.js';
import {
  GUARANTEE_IDS,
  type CreateConfinementOptions,
  type GuaranteeId,
  type GuaranteeStatus,
} from './types.js';

export type DoctorOptions = Omit<CreateConfinementOptions, 'mode'> & {
  /** Milliseconds the throwaway sandbox may run. Default `ISOLATION_LIMITS.doctorTimeoutMs`. */
  timeoutMs?: number;
};

export interface DoctorReport {
  schemaVersion: 1;
  guarantees: GuaranteeStatus[];
}

/**
 * The probe that runs confined. What it prints is never trusted: every verdict below comes from
 * host-side evidence (the canary's bytes appearing where the sandbox could write, files that
 * exist or not on the host, connections the host's listeners saw, a host process still alive).
 * It reports what it read so that a read that succeeded leaves evidence the host can see.
 */
const PROBE_SOURCE = String.raw`
import { readFileSync, writeFileSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { request } from 'node:http';
const t = JSON.parse(process.argv[2]);
const out = [];
const attempt = async (name, fn) => { try { out.push([name, 'ok', String(await fn()).slice(0, 4096)]); } catch (e) { out.push([name, 'refused', e.code ?? e.message]); } };
const tcp = (opts) => new Promise((resolve, reject) => { const s = connect(opts); s.setTimeout(2000, () => { s.destroy(); reject(new Error('timeout')); }); s.on('connect', () => { s.end('x'); resolve('connected'); }); s.on('error', reject); });
const viaProxy = (port) => new Promise((resolve, reject) => { const p = new URL(process.env.HTTP_PROXY); const r = request({ host: p.hostname, port: p.port, path: 'http://127.0.0.1:' + port + '/', timeout: 2000 }, (res) => { let b = ''; res.on('data', (d) => (b += d)); res.on('end', () => resolve(res.statusCode + ' ' + b)); }); r.on('timeout', () => r.destroy(new Error('timeout'))); r.on('error', reject); r.end(); });
await attempt('read-host-file', () => readFileSync(t.canaryFile, 'utf8'));
await attempt('write-outside', () => writeFileSync(t.outsideFile, 'escaped'));
await attempt('write-host-tmp', () => writeFileSync(t.hostTmpFile, 'escaped'));
await attempt('write-workspace', () => writeFileSync(t.workspaceFile, 'ok'));
await attempt('tcp-direct', () => tcp({ host: '127.0.0.1', port: t.deniedPort }));
await attempt('proxy-denied', () => viaProxy(t.deniedPort));
await attempt('proxy-allowed', () => viaProxy(t.allowedPort));
await attempt('unix-socket', () => tcp({ path: t.unixSocket }));
await attempt('signal-host', () => process.kill(t.hostPid, 'SIGTERM'));
await attempt('list-processes', () => readdirSync('/proc').filter((n) => /^\d+$/.test(n)).join(','));
writeFileSync(t.reportFile, JSON.stringify(out));
`;

interface Listener {
  port: number;
  connections: () => number;
  close: () => Promise<void>;
}

async function tcpListener(): Promise<Listener> {
  let count = 0;
  const server: Server = createServer((socket) => {
    count++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    connections: () => count,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function httpListener(body: string): Promise<Listener> {
  let count = 0;
  // node:http is loaded here, not when the package loads: every sandbox boot loads this module
  // and none runs the doctor (~0.8 ms of each boot's start-up, issue 14).
  const { createServer: createHttpServer } = process.getBuiltinModule('node:http');
  const server: HttpServer = createHttpServer((_, res) => {
    count++;
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    connections: () => count,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function unixListener(path: string): Promise<Omit<Listener, 'port'>> {
  let count = 0;
  const server = createServer((socket) => {
    count++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return {
    connections: () => count,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function runConfined(
  command: { file: string; args: readonly string[]; cwd: string; env: Record<string, string> },
  timeoutMs: number,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    let output = '';
    const child = spawn(command.file, command.args, {
      cwd: command.cwd,
      env: command.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (chunk: Buffer) => {
      if (output.length < 64 * 1024) output += chunk.toString('utf8');
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ code: null, output: error.message });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/**
 * A host process that counts the signals it receives and answers the count on request: the
 * answer travels over its own stdin/stdout pipes, after the probe has finished, so a signal
 * the probe managed to send is counted (or has killed it) by the time the question arrives.
 */
const WITNESS_SOURCE =
  "let n = 0; for (const s of ['SIGTERM','SIGINT','SIGHUP','SIGUSR1','SIGUSR2']) process.on(s, () => n++);" +
  "process.stdin.on('data', () => process.stdout.write(String(n) + '\\n'));";

function signalsSeen(witness: ChildProcess): Promise<number> {
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

async function canaryLeaked(token: string, output: string, dirs: string[]): Promise<boolean> {
  if (output.includes(token)) return true;
  for (const dir of dirs)
    for (const name of await readdir(dir)) {
      const text = await readFile(join(dir, name), 'utf8').catch(() => '');
      if (text.includes(`canary-${token}`)) return true;
    }
  return false;
}

/**
 * Proves each guarantee by attempting what it forbids in a throwaway sandbox (docs/sandbox.md,
 * "Confinement"): a guarantee is `enforced` only when confinement claims it AND the attempt
 * left no trace on the host AND the allowed control operation of the same probe worked (so a
 * probe that never ran cannot pass).
 */
export async function runDoctor(options: DoctorOptions = {}): Promise<DoctorReport> {
  const timeoutMs = options.timeoutMs ?? ISOLATION_LIMITS.doctorTimeoutMs;
  const root = await mkdtemp(join(options.runtimeParent ?? tmpdir(), 'pw-doctor-'));
  const token = randomBytes(16).toString('hex');
  const dirs = {
    pack: join(root, 'pack'),
    workspace: join(root, 'workspace'),
    state: join(root, 'state'),
    outside: join(root, 'outside'),
  };
  for (const dir of Object.values(dirs)) await mkdir(dir, { mode: 0o700 });
  const canaryFile = join(dirs.outside, 'secret.txt');
  await writeFile(canaryFile, `canary-${token}`);
  await writeFile(join(dirs.pack, 'probe.mjs'), PROBE_SOURCE);
  const hostTmpFile = join(tmpdir(), `pw-doctor-escape-${token}`);
  const outsideFile = join(dirs.outside, 'escaped.txt');

  const denied = await tcpListener();
  const allowed = await httpListener(`allowed-${token}`);
  const unix = await unixListener(join(dirs.outside, 'host.sock'));
  const host = spawn(process.execPath, ['-e', WITNESS_SOURCE], {
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const cleanups: (() => Promise<unknown>)[] = [
    () => denied.close(),
    () => allowed.close(),
    () => unix.close(),
    async () => host.kill('SIGKILL'),
    () => rm(hostTmpFile, { force: true }),
    () => rm(root, { recursive: true, force: true }),
  ];
  try {
    const confinement = await createConfinement(
      {
        packDir: dirs.pack,
        workspace: dirs.workspace,
        engineStateDir: dirs.state,
        fileAccess: 'workspace-write',
        allowOrigins: [`http://127.0.0.1:${allowed.port}`],
      },
      { ...options, mode: 'auto' },
    );
    cleanups.unshift(() => confinement.close());
    const claimed = new Map(confinement.guarantees.map((g) => [g.id, g]));
    if (confinement.guarantees.every((g) => g.status === 'unavailable'))
      return { schemaVersion: 1, guarantees: [...confinement.guarantees] };

    const reportFile = join(dirs.workspace, 'report.json');
    const targets = {
      canaryFile,
      outsideFile,
      hostTmpFile,
      workspaceFile: join(dirs.workspace, 'ok.txt'),
      deniedPort: denied.port,
      allowedPort: allowed.port,
      unixSocket: join(dirs.outside, 'host.sock'),
      hostPid: host.pid,
      reportFile,
    };
    const run = await runConfined(
      confinement.wrap({
        file: process.execPath,
        args: [join(dirs.pack, 'probe.mjs'), JSON.stringify(targets)],
        cwd: dirs.workspace,
        env: { PATH: '/usr/bin:/bin', HOME: dirs.state, TMPDIR: '/tmp' },
      }),
      timeoutMs,
    );
    const ran = existsSync(reportFile);
    const notRun = `the confined probe did not complete (exit ${run.code}): ${run.output.trim().slice(0, 300)}`;
    const leakedCanary = await canaryLeaked(token, run.output, [dirs.workspace, dirs.state]);
    const signals = await signalsSeen(host);
    const evidence: Record<GuaranteeId, string | undefined> = {
      'fs-read': !ran
        ? notRun
        : leakedCanary
          ? 'a confined process read a host file outside its folders'
          : undefined,
      'fs-write': !ran
        ? notRun
        : existsSync(outsideFile) || existsSync(hostTmpFile)
          ? 'a confined process wrote outside the workspace'
          : !existsSync(targets.workspaceFile)
            ? 'a confined process could not write in its workspace'
            : undefined,
      network: !ran
        ? notRun
        : denied.connections() > 0
          ? 'a confined process reached a host loopback listener'
          : unix.connections() > 0
            ? 'a confined process reached a host unix socket'
            : allowed.connections() === 0
              ? 'the allowed origin was not reachable through the proxy'
              : undefined,
      processes: !ran
        ? notRun
        : signals !== 0
          ? 'a confined process signalled a host process'
          : undefined,
    };
    return {
      schemaVersion: 1,
      guarantees: GUARANTEE_IDS.map((id): GuaranteeStatus => {
        const claim = claimed.get(id)!;
        if (claim.status === 'unavailable') return claim;
        const failure = evidence[id];
        return failure === undefined
          ? { id, status: 'enforced', ...(claim.by ? { by: claim.by } : {}) }
          : { id, status: 'unavailable', reason: failure };
      }),
    };
  } catch (error) {
    const reason = `the doctor could not run: ${(error as Error).message}`;
    return {
      schemaVersion: 1,
      guarantees: GUARANTEE_IDS.map((id) => ({ id, status: 'unavailable', reason })),
    };
  } finally {
    for (const cleanup of cleanups) await cleanup().catch(() => {});
  }
}
