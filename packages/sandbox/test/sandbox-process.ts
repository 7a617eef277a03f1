import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { RawPeer } from '@packwarden/runner-host/conformance';
import { buildIfStale } from '../../../scripts/build-if-stale.js';

// serveSandbox owns its process (stdout, stderr, env, cwd): it runs in a child of its own,
// against the built package, as `packwarden sandbox` runs it.
const packageRoot = fileURLToPath(new URL('..', import.meta.url));
const runnerHostRoot = fileURLToPath(new URL('../../runner-host', import.meta.url));
const dist = new URL('../dist/index.js', import.meta.url).href;

/** Builds what the sandbox child runs (call in `beforeAll`). */
export function buildSandbox(): void {
  buildIfStale(runnerHostRoot, { output: 'dist/index.js' });
  buildIfStale(packageRoot, { output: 'dist/index.js' });
}

export const WAIT = 15_000;
const children: ChildProcess[] = [];
const peers: RawPeer[] = [];

/** Closes the sessions and kills the sandboxes a test started (call in `afterEach`). */
export async function stopSandboxes(): Promise<void> {
  for (const peer of peers.splice(0)) await peer.close().catch(() => undefined);
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
}

/**
 * A sandbox serving `pack` on a socket, in a child process. The harness stands for any code
 * inside the sandbox process that writes to stderr (an SDK's diagnostics, a library's warning,
 * the CLI's unhandled-rejection log): a message on the IPC channel is written to stderr as is.
 */
export function startSandbox(pack: string, socket: string, stateDir: string) {
  const source = `
    const { serveSandbox } = await import(${JSON.stringify(dist)});
    const controller = new AbortController();
    process.on('SIGTERM', () => controller.abort());
    process.on('message', (text) => {
      process.stderr.write('in-process write: ' + text + '\\n');
      process.send('written');
    });
    await serveSandbox({
      agent: ${JSON.stringify(pack)},
      transport: { kind: 'socket', path: ${JSON.stringify(socket)} },
      stateDir: ${JSON.stringify(stateDir)},
      isolation: 'off',
      cancelGraceMs: 500,
      signal: controller.signal,
      log: (level, message) => {
        process.stderr.write(level + ': ' + message + '\\n');
        if (message.startsWith('listening on ')) process.send('listening');
      },
    });
    process.exit(0);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', source], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  children.push(child);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const next = (what: string) =>
    new Promise<void>((resolve, reject) => {
      const onMessage = (message: unknown) => {
        if (message !== what) return;
        child.off('message', onMessage);
        resolve();
      };
      child.on('message', onMessage);
      child.once('exit', (code) => reject(new Error(`sandbox exited (${code}): ${stderr}`)));
    });
  return { child, stderr: () => stderr, next };
}

export async function session(socket: string): Promise<RawPeer> {
  const peer = await RawPeer.open({ socket });
  peers.push(peer);
  await peer.hello();
  await peer.waitFor((f) => f.type === 'welcome', WAIT, 'welcome');
  return peer;
}
