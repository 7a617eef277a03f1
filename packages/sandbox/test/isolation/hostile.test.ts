import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createConfinement, type Confinement } from '../../src/isolation/index.js';
import { escapes, runCommand, setUpHost, type Host } from './host-evidence.js';

// The hostile pack (test/fixtures/hostile-pack) driven through the library API, wrap + spawn,
// the way engines start their children. docs/sandbox.md "Confinement" lists what must hold.

let host: Host;
let runtimeParent: string;
const open: Confinement[] = [];

beforeEach(async () => {
  host = await setUpHost();
  runtimeParent = await mkdtemp(join(tmpdir(), 'pw-runtime-'));
});

afterEach(async () => {
  for (const confinement of open.splice(0)) await confinement.close();
  await host.close();
  await rm(runtimeParent, { recursive: true, force: true });
});

async function confine(
  mode: 'required' | 'auto',
  extra: Partial<Parameters<typeof createConfinement>[0]> = {},
  options: Partial<Parameters<typeof createConfinement>[1]> = {},
): Promise<Confinement> {
  const confinement = await createConfinement(
    {
      packDir: host.pack,
      workspace: host.workspace,
      engineStateDir: host.state,
      fileAccess: 'workspace-write',
      allowOrigins: [],
      ...extra,
    },
    { mode, runtimeParent, ...options },
  );
  open.push(confinement);
  return confinement;
}

const escapeSh = () => ({
  file: join(host.pack, 'bin', 'escape.sh'),
  args: [],
  cwd: host.workspace,
  env: host.env(),
});
const escapeMjs = () => ({
  file: process.execPath,
  args: [join(host.pack, 'bin', 'escape.mjs')],
  cwd: host.workspace,
  env: host.env(),
});

describe('the hostile pack under isolation required', () => {
  it('exec command (escape.sh): every escape is blocked and the workspace stays writable', async () => {
    const confinement = await confine('required');
    const result = await runCommand(confinement.wrap(escapeSh()), 'hi');
    expect(result.stdout).toContain('escape.sh done');
    expect(await escapes(host, result)).toEqual([]);
    expect(await readFile(join(host.workspace, 'escape-sh.txt'), 'utf8')).toBe('allowed\n');
  });

  it.each(['perl', 'node'] as const)(
    'Node child (escape.mjs, a hook or engine child), %s relay: every escape is blocked, the allowed origin is reached',
    async (relay) => {
      const confinement = await confine('required', {}, { relay });
      confinement.allowModelOrigin(`${host.allowed.origin}/v1`);
      const result = await runCommand(confinement.wrap(escapeMjs()));
      expect(result.stdout).toContain('escape.mjs done');
      expect(await escapes(host, result)).toEqual([]);
      expect(host.allowed.requests).toEqual([`/allowed-${host.token}`]);
      expect(await readFile(join(host.workspace, 'escape-mjs.txt'), 'utf8')).toBe('allowed');
      // The proxy refused the non-allowed origin; the listener behind it saw nothing.
      expect(confinement.proxyEvents).toContainEqual(
        expect.objectContaining({ target: `http://127.0.0.1:${host.tcp.port}`, verdict: 'denied' }),
      );
    },
  );

  it('an origin from the pack allow list is reachable; a replaced model origin is not any more', async () => {
    const confinement = await confine('required', { allowOrigins: [] });
    confinement.allowModelOrigin(host.allowed.origin);
    confinement.allowModelOrigin('https://model.example');
    const result = await runCommand(confinement.wrap(escapeMjs()));
    expect(result.stdout).toContain('escape.mjs done');
    expect(host.allowed.requests).toEqual([]);
    const allowed = await confine('required', { allowOrigins: [host.allowed.origin] });
    await runCommand(allowed.wrap(escapeMjs()));
    expect(host.allowed.requests).toEqual([`/allowed-${host.token}`]);
  });

  it('fileAccess read-only: the workspace is visible but not writable', async () => {
    await writeFile(join(host.workspace, 'input.txt'), 'readable');
    const confinement = await confine('required', { fileAccess: 'read-only' });
    const result = await runCommand(
      confinement.wrap({
        file: '/bin/sh',
        args: ['-c', 'cat input.txt; echo x > written.txt; rm -f input.txt; echo " rc=$?"'],
        cwd: host.workspace,
        env: host.env(),
      }),
    );
    expect(result.stdout).toContain('readable');
    expect(existsSync(join(host.workspace, 'written.txt'))).toBe(false);
    expect(existsSync(join(host.workspace, 'input.txt'))).toBe(true);
    expect(await escapes(host, result)).toEqual([]);
  });

  it('the environment never reaches the host-side bwrap process nor its argv, and its file is gone', async () => {
    const confinement = await confine('required');
    const wrapped = confinement.wrap({
      ...escapeSh(),
      env: host.env({
        PACKWARDEN_MODEL_TOKEN: `tok-${host.token}`,
        LD_PRELOAD: '/nonexistent/evil.so',
      }),
    });
    expect(wrapped.env).toEqual({});
    expect(wrapped.args.join(' ')).not.toContain(`tok-${host.token}`);
    expect(wrapped.args.join(' ')).not.toContain('evil.so');
    const result = await runCommand(wrapped);
    expect(result.stdout).toContain('escape.sh done');
    const [dir] = await readdir(runtimeParent);
    // Each command has a folder of its own there; its file is gone once read.
    const left = await readdir(join(runtimeParent, dir!, 'env'), {
      recursive: true,
      withFileTypes: true,
    });
    expect(left.filter((entry) => !entry.isDirectory())).toEqual([]);
  });

  it('keeps the descriptors engines pass (fd 3) and closes leaked ones above 9 (a host pipe at fd 12)', async () => {
    const confinement = await confine('required');
    const wrapped = confinement.wrap({
      file: process.execPath,
      args: [
        '-e',
        "const fs = require('fs'); fs.writeSync(3, 'kept'); try { fs.writeSync(12, 'leaked'); } catch {}",
      ],
      cwd: host.workspace,
      env: host.env(),
    });
    const { spawn } = await import('node:child_process');
    const stdio: ('ignore' | 'pipe')[] = [
      'ignore',
      'ignore',
      'pipe',
      'pipe',
      ...Array<'ignore'>(8).fill('ignore'),
      'pipe',
    ];
    const child = spawn(wrapped.file, [...wrapped.args], {
      cwd: wrapped.cwd,
      env: wrapped.env,
      stdio,
    });
    const received = { 3: '', 12: '' };
    for (const fd of [3, 12] as const)
      (child.stdio as unknown as NodeJS.ReadableStream[])[fd]!.on(
        'data',
        (d: Buffer) => (received[fd] += d.toString()),
      );
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    expect(received).toEqual({ 3: 'kept', 12: '' });
  });

  it('killing the process group ends everything in the sandbox, grandchildren included', async () => {
    const confinement = await confine('required', { allowOrigins: [] });
    const tunnel = createServer();
    const closed = new Promise<void>((resolve) =>
      tunnel.on('connection', (socket) => {
        socket.on('error', () => {});
        socket.on('close', () => resolve());
      }),
    );
    await new Promise<void>((resolve) => tunnel.listen(0, '127.0.0.1', resolve));
    const port = (tunnel.address() as { port: number }).port;
    confinement.allowModelOrigin(`http://127.0.0.1:${port}`);
    // A grandchild in its own session holds a tunnel through the proxy open; the sandbox's
    // direct child waits forever. Killing the group must close the tunnel (host evidence).
    const holder =
      `const s = require('net').connect(3128, '127.0.0.1', () => s.write('CONNECT 127.0.0.1:${port} HTTP/1.1\\r\\n\\r\\n'));` +
      `s.on('data', () => process.stdout.write('held\\n')); setInterval(() => {}, 1e6);`;
    const wrapped = confinement.wrap({
      file: '/bin/sh',
      args: ['-c', `setsid ${process.execPath} -e "${holder}" & wait`],
      cwd: host.workspace,
      env: host.env(),
    });
    const { spawn } = await import('node:child_process');
    const child = spawn(wrapped.file, [...wrapped.args], {
      cwd: wrapped.cwd,
      env: wrapped.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    process.kill(-child.pid!, 'SIGTERM');
    await closed;
    await new Promise((resolve) => tunnel.close(resolve));
  });

  it('a vendor CLI outside the system folders runs only when listed in readOnlyPaths, read-only', async () => {
    const vendor = join(host.outside, 'vendor');
    await mkdir(vendor);
    const tool = join(vendor, 'tool.sh');
    await writeFile(tool, '#!/bin/sh\necho vendor-ok\necho tampered > "$0"\n');
    await chmod(tool, 0o755);
    const command = { file: tool, args: [], cwd: host.workspace, env: host.env() };
    const hidden = await runCommand((await confine('required')).wrap(command));
    expect(hidden.code).not.toBe(0);
    expect(hidden.stdout).not.toContain('vendor-ok');
    const listed = await runCommand(
      (await confine('required', {}, { readOnlyPaths: [vendor] })).wrap(command),
    );
    expect(listed.stdout).toContain('vendor-ok');
    expect(await readFile(tool, 'utf8')).toBe('#!/bin/sh\necho vendor-ok\necho tampered > "$0"\n');
    expect(await escapes(host, listed)).toEqual([]);
  });

  it('unix sockets already inside the visible folders (a frame socket in the state folder) are masked', async () => {
    const paths = [join(host.state, 'packwarden.sock'), join(host.workspace, 'run', 'agent.sock')];
    await mkdir(join(host.workspace, 'run'));
    let connections = 0;
    const servers = await Promise.all(
      paths.map(async (path) => {
        const server = createServer((socket) => {
          connections++;
          socket.destroy();
        });
        await new Promise<void>((resolve) => server.listen(path, resolve));
        return server;
      }),
    );
    try {
      const confinement = await confine('required');
      const probe = paths
        .map(
          (p) =>
            `await new Promise((r) => { const s = net.connect(${JSON.stringify(p)}); s.on('connect', () => { console.log('connected'); s.end(); r(); }); s.on('error', (e) => { console.log(e.code); r(); }); });`,
        )
        .join('\n');
      const result = await runCommand(
        confinement.wrap({
          file: process.execPath,
          args: ['--input-type=module', '-e', `import net from 'node:net';\n${probe}`],
          cwd: host.workspace,
          env: host.env(),
        }),
      );
      expect(result.stdout.trim().split('\n')).toHaveLength(2);
      expect(result.stdout).not.toContain('connected');
      expect(connections).toBe(0);
      for (const path of paths) expect(existsSync(path)).toBe(true);
    } finally {
      for (const server of servers) await new Promise((resolve) => server.close(resolve));
    }
  });

  it('close() removes the runtime folder; a later wrap throws ERR_ISOLATION_CLOSED', async () => {
    const confinement = await confine('required');
    expect(await readdir(runtimeParent)).toHaveLength(1);
    await confinement.close();
    expect(await readdir(runtimeParent)).toEqual([]);
    expect(() => confinement.wrap(escapeSh())).toThrow(
      expect.objectContaining({ code: 'ERR_ISOLATION_CLOSED' }),
    );
  });
});

describe('the hostile pack in a degraded environment', () => {
  // A bwrap that runs inside `bwrap --unshare-user --disable-userns`: every namespace it asks
  // for is refused by the kernel, as in a sandbox or container that forbids nesting.
  async function nestedBwrap(): Promise<string> {
    const path = join(runtimeParent, '..', `pw-nested-bwrap-${host.token}`);
    await writeFile(
      path,
      '#!/bin/sh\nexec /usr/bin/bwrap --unshare-user --disable-userns --dev-bind / / -- /usr/bin/bwrap "$@"\n',
    );
    await chmod(path, 0o755);
    return path;
  }

  it('required refuses with ERR_ISOLATION_UNAVAILABLE naming each guarantee, before anything runs', async () => {
    const bwrapPath = await nestedBwrap();
    try {
      const error = await confine('required', {}, { bwrapPath }).catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'SandboxError', code: 'ERR_ISOLATION_UNAVAILABLE' });
      expect((error as Error).message).toMatch(
        /fs-read, fs-write, network, processes cannot be enforced: bubblewrap failed/,
      );
      expect(await readdir(runtimeParent)).toEqual([]);
    } finally {
      await rm(bwrapPath, { force: true });
    }
  });

  it('auto reports every guarantee unavailable, and the same escapes then succeed (what the warning is for)', async () => {
    const bwrapPath = await nestedBwrap();
    try {
      const confinement = await confine('auto', {}, { bwrapPath });
      expect(confinement.guarantees.map((g) => [g.id, g.status])).toEqual([
        ['fs-read', 'unavailable'],
        ['fs-write', 'unavailable'],
        ['network', 'unavailable'],
        ['processes', 'unavailable'],
      ]);
      expect(confinement.guarantees[0]!.reason).toMatch(/bubblewrap failed/);
      const command = escapeMjs();
      expect(confinement.wrap(command)).toBe(command);
      const result = await runCommand(confinement.wrap(command));
      expect(await escapes(host, result)).toEqual(
        expect.arrayContaining([
          'read-host-file',
          'write-outside',
          'tcp-loopback',
          'unix-socket',
          'signal-host',
        ]),
      );
    } finally {
      await rm(bwrapPath, { force: true });
    }
  });

  it('bwrap missing from PATH: required refuses, auto reports', async () => {
    const env = { PATH: '/nonexistent' };
    const error = await confine('required', {}, { env }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'ERR_ISOLATION_UNAVAILABLE' });
    expect((error as Error).message).toMatch(/bwrap\) is not on PATH/);
    const auto = await confine('auto', {}, { env });
    expect(
      auto.guarantees.every((g) => g.status === 'unavailable' && /not on PATH/.test(g.reason!)),
    ).toBe(true);
    expect(await readdir(runtimeParent)).toEqual([]);
  });

  it('not Linux: required refuses and says why', async () => {
    const error = await confine('required', {}, { platform: 'darwin' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'ERR_ISOLATION_UNAVAILABLE' });
    expect((error as Error).message).toMatch(/only on Linux \(this is darwin\)/);
  });
});
