import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { realpathSync } from 'node:fs';
import { join } from 'node:path';
import { connectRunnerSocket } from '@packwarden/runner-host';
import { runConformance } from '@packwarden/runner-host/conformance';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { cleanTemps, cli, tempDir } from './helpers.js';
import {
  baseEnv,
  bin,
  ensureRunnerHostBuild,
  fixture,
  selfContainedScriptedPack,
  packwarden,
  startCli,
  startSandbox,
  textOf,
  until,
} from './fixtures/sandbox.js';

afterEach(cleanTemps);
let scriptedPack: string;
let scriptedRoot: string;
beforeAll(async () => {
  ensureRunnerHostBuild();
  scriptedRoot = mkdtempSync(join(tmpdir(), 'pw-scripted-'));
  scriptedPack = await selfContainedScriptedPack(scriptedRoot);
}, 120_000);
afterAll(() => rmSync(scriptedRoot, { recursive: true, force: true }));

const probePack = fixture('probe-pack');
const SECRET_FRAGMENTS = ['sk-live-', 'SESSION-KEY', 'SECRET-VALUE'];

interface Report {
  instance: number;
  initBaseUrl: string | null;
  cwd: string;
  workspaceRoot: string;
  fileAccess: string;
  env: Record<string, string>;
  hasKey: boolean;
  keyInEnv: boolean;
  keyInArgv: boolean;
  baseUrl: string | null;
  moduleUrl: string;
}

function stateDir(): string {
  return realpathSync(tempDir());
}

describe('the runner-host conformance kit against packwarden sandbox', () => {
  test('passes every case over --stdio (a fresh sandbox per case)', async () => {
    const state = stateDir();
    // The kit tests the protocol, not confinement (see "confinement (--isolation)" below).
    const command = [process.execPath, bin, 'sandbox', '--agent', scriptedPack, '--stdio']
      .concat(['--state-dir', state, '--cancel-grace-ms', '300', '--isolation', 'off'])
      .map((part) => JSON.stringify(part))
      .join(' ');
    const report = await runConformance({ stdio: command });
    expect(report.results.filter((r) => !r.ok)).toEqual([]);
    expect(report.results.length).toBeGreaterThanOrEqual(24);
  }, 180_000);

  test('passes every case over --socket; the last kills it; its stderr never held a secret', async () => {
    const state = stateDir();
    const socket = join(state, 'sandbox.sock');
    const child = spawn(
      process.execPath,
      [bin, 'sandbox', '--agent', scriptedPack, '--socket', socket].concat([
        '--state-dir',
        state,
        '--cancel-grace-ms',
        '300',
        '--isolation',
        'off',
      ]),
      { env: baseEnv(), stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const exitSignal = new Promise<NodeJS.Signals | null>((resolve) =>
      child.once('exit', (_code, signal) => resolve(signal)),
    );
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => (stderr += chunk));
    await until(() => stderr.includes('listening on'), 10_000, 'the socket');
    // Custom engines run out of process: the engine's crash step would kill only the engine
    // child, so the kit kills the sandbox itself from outside.
    const report = await runConformance({ socket, killHost: () => void child.kill('SIGKILL') });
    expect(report.results.filter((r) => !r.ok)).toEqual([]);
    expect(await exitSignal).toBe('SIGKILL');
    expect(report.results.map((r) => r.name).at(-1)).toBe('host killed mid-run');
    expect(stderr).toContain('[redacted]');
    for (const fragment of SECRET_FRAGMENTS) expect(stderr).not.toContain(fragment);
  }, 60_000);
});

describe('packwarden sandbox', () => {
  test('its workspace is authoritative: a wire workspaceRoot is ignored with one warning, and each turn starts in the workspace', async () => {
    const state = stateDir();
    const sandbox = startSandbox(['--agent', probePack, '--state-dir', state]);
    const workspace = join(state, 'workspace');
    const first = await sandbox.run({ message: 'report', workspaceRoot: '/somewhere/else' });
    const report = JSON.parse(textOf(first.events)) as Report;
    expect(report.workspaceRoot).toBe(workspace);
    expect(report.cwd).toBe(workspace);
    expect(textOf((await sandbox.run({ message: 'chdir-away' })).events)).toBe('/');
    const write = await sandbox.run({
      message: 'write-relative',
      workspaceRoot: '/again/elsewhere',
    });
    expect(textOf(write.events)).toBe(workspace);
    expect(readFileSync(join(workspace, 'relative.txt'), 'utf8')).toContain('relative path');
    const warnings = [...first.events, ...write.events].filter((e) => e.type === 'warning');
    expect(warnings).toEqual([expect.objectContaining({ code: 'workspace_root_ignored' })]);
    // The pack was synced into the workspace.
    expect(existsSync(join(workspace, '.packwarden', 'agents', 'probe-pack', 'agent.yaml'))).toBe(
      true,
    );
    await sandbox.client.shutdown();
    expect(await sandbox.exit).toBe(0);
  });

  test('permissions cross the boundary, and fall back to the pack’s fileAccess, never broader', async () => {
    const accessOf = async (
      sandbox: ReturnType<typeof startSandbox>,
      fileAccess?: 'none' | 'read' | 'write',
    ) =>
      (
        JSON.parse(
          textOf(
            (
              await sandbox.run({
                message: 'report',
                ...(fileAccess ? { permissions: { fileAccess } } : {}),
              })
            ).events,
          ),
        ) as Report
      ).fileAccess;
    const writer = startSandbox(['--agent', probePack, '--state-dir', stateDir()]);
    expect(await accessOf(writer)).toBe('workspace-write');
    expect(await accessOf(writer, 'none')).toBe('none');
    expect(await accessOf(writer, 'read')).toBe('read-only');
    expect(await accessOf(writer, 'write')).toBe('workspace-write');
    await writer.client.shutdown();

    const readOnlyPack = join(tempDir(), 'read-only-pack');
    cpSync(probePack, readOnlyPack, { recursive: true });
    const manifest = join(readOnlyPack, 'agent.yaml');
    writeFileSync(manifest, readFileSync(manifest, 'utf8').replace('workspace-write', 'read-only'));
    const reader = startSandbox(['--agent', readOnlyPack, '--state-dir', stateDir()]);
    expect(await accessOf(reader)).toBe('read-only');
    expect(await accessOf(reader, 'write')).toBe('read-only');
    await reader.client.shutdown();
  });

  test('the contract’s words on the wire (issue 10): workspace-write, read-only, a bare fileAccess, and full only when the pack declares full', async () => {
    const accessOf = async (sandbox: ReturnType<typeof startSandbox>, request: object) =>
      (JSON.parse(textOf((await sandbox.run({ message: 'report', ...request })).events)) as Report)
        .fileAccess;
    // probe-pack declares workspace-write.
    const writer = startSandbox(['--agent', probePack, '--state-dir', stateDir()]);
    expect(await accessOf(writer, { permissions: { fileAccess: 'workspace-write' } })).toBe(
      'workspace-write',
    );
    expect(await accessOf(writer, { permissions: { fileAccess: 'read-only' } })).toBe('read-only');
    expect(await accessOf(writer, { fileAccess: 'read-only' })).toBe('read-only');
    // A frame narrows the pack's declaration and never widens it.
    expect(await accessOf(writer, { permissions: { fileAccess: 'full' } })).toBe('workspace-write');
    expect(await accessOf(writer, { fileAccess: 'full' })).toBe('workspace-write');
    await writer.client.shutdown();
    expect(await writer.exit).toBe(0);

    const fullPack = join(tempDir(), 'full-pack');
    cpSync(probePack, fullPack, { recursive: true });
    const manifest = join(fullPack, 'agent.yaml');
    writeFileSync(manifest, readFileSync(manifest, 'utf8').replace('workspace-write', 'full'));
    // full needs no confinement of writes; the test is about the words, not the walls.
    const full = startSandbox([
      '--agent',
      fullPack,
      '--state-dir',
      stateDir(),
      '--isolation',
      'off',
    ]);
    expect(await accessOf(full, {})).toBe('full');
    expect(await accessOf(full, { fileAccess: 'full' })).toBe('full');
    expect(await accessOf(full, { permissions: { fileAccess: 'workspace-write' } })).toBe(
      'workspace-write',
    );
    await full.client.shutdown();
    expect(await full.exit).toBe(0);
  });

  test('all state lives under --state-dir, PACKWARDEN_SANDBOX=1, and credentials in its environment are dropped', async () => {
    const state = stateDir();
    const token = 'env-token-must-not-stay-123';
    const sandbox = startSandbox(['--agent', probePack, '--state-dir', state], {
      ...baseEnv(),
      HOME: '/root-home-of-the-caller',
      PACKWARDEN_MODEL_TOKEN: token,
    });
    const { events } = await sandbox.run({ message: 'report', modelToken: token });
    const report = JSON.parse(textOf(events)) as Report;
    // The engine's own folders are in <state>/engine, the one part of the state pack code sees.
    expect(report.env).toEqual({
      HOME: join(state, 'engine', 'home'),
      PACKWARDEN_HOME: join(state, 'packwarden'),
      PACKWARDEN_SANDBOX: '1',
      XDG_CACHE_HOME: join(state, 'engine', 'cache'),
      TMPDIR: join(state, 'engine', 'tmp'),
      homedir: join(state, 'engine', 'home'),
    });
    expect(report.hasKey).toBe(true);
    expect(report.keyInEnv).toBe(false);
    await sandbox.client.shutdown();
  });

  test('the engine is rebuilt when baseUrl or modelToken change, and the token never leaves in a frame', async () => {
    const sandbox = startSandbox(['--agent', probePack, '--state-dir', stateDir()]);
    const seen: string[] = [];
    const instance = async (baseUrl: string, modelToken: string) => {
      const { events } = await sandbox.run({ message: 'report', baseUrl, modelToken });
      seen.push(JSON.stringify(events));
      const report = JSON.parse(textOf(events)) as Report;
      expect(report.initBaseUrl).toBe(baseUrl);
      return report.instance;
    };
    const first = await instance('http://gateway-a', 'token-one-aaaaaa');
    expect(await instance('http://gateway-a', 'token-one-aaaaaa')).toBe(first);
    expect(await instance('http://gateway-a', 'token-two-bbbbbb')).toBe(first + 1);
    expect(await instance('http://gateway-b', 'token-two-bbbbbb')).toBe(first + 2);
    for (const frames of seen) {
      expect(frames).not.toContain('token-one-aaaaaa');
      expect(frames).not.toContain('token-two-bbbbbb');
    }
    await sandbox.client.shutdown();
  });

  test('console output of the engine goes to stderr, scrubbed; stdout carries only frames', async () => {
    const sandbox = startSandbox(['--agent', probePack, '--state-dir', stateDir()]);
    const token = 'console-secret-token-42';
    const { outcome } = await sandbox.run({ message: 'console', modelToken: token });
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    await sandbox.client.shutdown();
    await sandbox.exit;
    expect(sandbox.protocolErrors).toEqual([]);
    expect(sandbox.stderr()).toContain('console.log says [redacted]');
    expect(sandbox.stderr()).toContain('console.error says hi');
    expect(sandbox.stderr()).toContain('a raw stdout write');
    expect(sandbox.stderr()).not.toContain(token);
  });

  test('an engine’s stray rejection is logged and the session lives on; an engine crash ends only the engine’s process', async () => {
    const sandbox = startSandbox(['--agent', probePack, '--state-dir', stateDir()]);
    expect((await sandbox.run({ message: 'reject' })).outcome.type).toBe('result');
    const after = await sandbox.run({ message: 'still alive?' });
    expect(textOf(after.events)).toBe('echo:still alive?');
    await until(() => sandbox.stderr().includes('a stray rejection'), 5000, 'the log line');
    expect(sandbox.stderr()).toContain('unhandled rejection');
    expect(textOf((await sandbox.run({ message: 'throw-later' })).events)).toBe('armed');
    const next = await sandbox.run({ message: 'after the crash' });
    expect(textOf(next.events)).toBe('echo:after the crash');
    await sandbox.client.shutdown();
    expect(await sandbox.exit).toBe(0);
  });

  test('boot failures exit non-zero and say why', () => {
    const state = stateDir();
    const at = (args: string[]) => packwarden(['sandbox', '--state-dir', state, ...args]);
    const missing = at(['--agent', '/nonexistent/pack', '--stdio']);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('/nonexistent/pack');

    const invalid = join(tempDir(), 'invalid');
    mkdirSync(invalid);
    writeFileSync(
      join(invalid, 'agent.yaml'),
      'apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: x, version: one}\n',
    );
    const bad = at(['--agent', invalid, '--stdio']);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('metadata.version');

    const enginePack = (engine: string) => {
      const dir = join(tempDir(), `uses-${engine}`);
      mkdirSync(dir);
      writeFileSync(
        join(dir, 'agent.yaml'),
        `apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: x, version: 1.0.0}\nspec: {engine: ${engine}}\n`,
      );
      return dir;
    };
    const unknown = at(['--agent', enginePack('nope'), '--stdio']);
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain('no engine "nope"');
    // claude and codex are built-in engines now: a pack naming one boots (its optional SDK is
    // installed in this workspace); ERR_ENGINE_SDK_MISSING is covered in @packwarden/engines.
    const claude = at(['--agent', enginePack('claude'), '--stdio']);
    expect(claude.status).toBe(0);

    const unbindable = at(['--agent', probePack, '--socket', '/nonexistent-dir/s.sock']);
    expect(unbindable.status).toBe(1);
    expect(unbindable.stderr).toContain('cannot listen on /nonexistent-dir/s.sock');
    const notASocket = join(tempDir(), 'precious.txt');
    writeFileSync(notASocket, 'keep me');
    const refused = at(['--agent', probePack, '--socket', notASocket]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('is not a socket');
    expect(readFileSync(notASocket, 'utf8')).toBe('keep me');

    // A state dir that cannot be created: its parent is a file.
    const blocked = join(notASocket, 'state');
    const noState = packwarden([
      'sandbox',
      '--agent',
      probePack,
      '--stdio',
      '--state-dir',
      blocked,
    ]);
    expect(noState.status).toBe(1);
    expect(noState.stderr).toContain(blocked);
    expect(at(['--agent', probePack]).status).toBe(2);
    expect(at(['--agent', probePack, '--stdio', '--socket', join(state, 's')]).status).toBe(2);
  });

  test('socket mode: a stale socket is replaced, the socket is 0660, and SIGTERM closes gracefully', async () => {
    const state = stateDir();
    const socket = join(state, 'run.sock');
    // A stale socket: its listener died without cleaning up.
    const stale = spawn(process.execPath, [
      '-e',
      `require('net').createServer().listen(${JSON.stringify(socket)}, () => process.kill(process.pid, 'SIGKILL'))`,
    ]);
    await new Promise((resolve) => stale.once('exit', resolve));
    expect(statSync(socket).isSocket()).toBe(true);

    const child = spawn(
      process.execPath,
      [bin, 'sandbox', '--agent', probePack, '--socket', socket, '--state-dir', state],
      {
        env: baseEnv(),
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => (stderr += chunk));
    const exit = new Promise<number | null>((resolve) =>
      child.once('exit', (code) => resolve(code)),
    );
    await until(() => stderr.includes('listening on'), 10_000, 'the socket');
    expect(statSync(socket).mode & 0o777).toBe(0o660);

    const { client } = await connectRunnerSocket(socket);
    let sleeping = false;
    const handle = client.run(
      { message: 'sleep' },
      { onEvent: (event) => (sleeping ||= event.type === 'text') },
    );
    await until(() => sleeping, 10_000, 'the turn to start');
    child.kill('SIGTERM');
    expect(await handle.outcome).toMatchObject({ type: 'result', stopReason: 'cancelled' });
    await client.closed;
    expect(await exit).toBe(0);
    expect(existsSync(socket)).toBe(false);
  });

  test('stdio mode: SIGINT ends the session gracefully', async () => {
    const sandbox = startSandbox(['--agent', probePack, '--state-dir', stateDir()]);
    let sleeping = false;
    const run = sandbox.run(
      { message: 'sleep' },
      { onEvent: (e) => (sleeping ||= e.type === 'text') },
    );
    await until(() => sleeping, 10_000, 'the turn to start');
    sandbox.child.kill('SIGINT');
    expect((await run).outcome).toMatchObject({ type: 'result', stopReason: 'cancelled' });
    expect(await sandbox.exit).toBe(0);
  });

  test('the built-in exec engine runs the pack’s command in the workspace; cancel kills it', async () => {
    const state = stateDir();
    const sandbox = startSandbox([
      '--agent',
      fixture('exec-pack'),
      '--state-dir',
      state,
      '--cancel-grace-ms',
      '400',
    ]);
    const welcome = await sandbox.client.welcome;
    expect(welcome.engines).toEqual([
      { id: 'exec', displayName: expect.stringContaining('agent.mjs') },
    ]);
    const { events, outcome } = await sandbox.run({
      message: 'hello',
      permissions: { fileAccess: 'write' },
    });
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(textOf(events)).toBe(
      `--greeting hi terse read-only cwd=${join(state, 'workspace')} message=hello`,
    );
    expect(events.find((e) => e.type === 'tool_end')).toMatchObject({ output: ['.packwarden'] });
    // Confined, the command's pid is the one of its own PID namespace: find it on the host by
    // its working directory (the workspace), the way an operator would.
    const workspace = join(state, 'workspace');
    const inWorkspace = () =>
      readdirSync('/proc').filter((entry) => {
        if (!/^\d+$/.test(entry) || Number(entry) === sandbox.child.pid) return false;
        try {
          return (
            readlinkSync(`/proc/${entry}/cwd`) === workspace &&
            !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${entry}/stat`, 'utf8'))
          );
        } catch {
          return false;
        }
      });
    let sleeping = false;
    const controller = new AbortController();
    const cancelled = sandbox.run(
      { message: 'sleep' },
      {
        signal: controller.signal,
        onEvent: (e) => (sleeping ||= e.type === 'text'),
      },
    );
    await until(() => sleeping && inWorkspace().length > 0, 10_000, 'the command to start');
    controller.abort();
    expect((await cancelled).outcome).toMatchObject({ type: 'result', stopReason: 'cancelled' });
    // It ignored SIGTERM: the process group's SIGKILL (after half the cancel grace) ended it.
    await until(() => inWorkspace().length === 0, 3000, 'the command to be killed');
    await sandbox.client.shutdown();
    expect(await sandbox.exit).toBe(0);
  });

  describe('--require-signed-pack', () => {
    async function signedCopy() {
      const dir = tempDir();
      const keyFile = join(dir, 'key.pem');
      const keygen = await cli([
        'pack',
        'keygen',
        '--kid',
        'sandbox-test',
        '-o',
        keyFile,
        '--json',
      ]);
      const keysFile = join(dir, 'keys.json');
      writeFileSync(
        keysFile,
        JSON.stringify({ 'sandbox-test': JSON.parse(keygen.stdout).publicKeyPem }),
      );
      const pack = join(dir, 'probe-pack');
      cpSync(probePack, pack, { recursive: true });
      expect(
        (await cli(['pack', 'sign', pack, '--key', keyFile, '--kid', 'sandbox-test'])).code,
      ).toBe(0);
      return { pack, keysFile };
    }

    test('verifies a private copy in the state dir, and runs and syncs only that copy', async () => {
      const { pack, keysFile } = await signedCopy();
      const state = stateDir();
      const sandbox = startSandbox([
        '--agent',
        pack,
        '--state-dir',
        state,
        '--require-signed-pack',
        '--keys',
        keysFile,
      ]);
      const report = JSON.parse(
        textOf((await sandbox.run({ message: 'report' })).events),
      ) as Report;
      expect(report.moduleUrl).toBe(
        `file://${join(state, 'pack', 'engines', 'probe', 'probe.mjs')}`,
      );
      expect(sandbox.stderr()).toContain('verified probe-pack@1.0.0, signed by sandbox-test');
      const synced = join(state, 'workspace', '.packwarden', 'agents', 'probe-pack');
      expect(readFileSync(join(synced, 'pack.sig'), 'utf8')).toBe(
        readFileSync(join(pack, 'pack.sig'), 'utf8'),
      );
      await sandbox.client.shutdown();
    });

    test('refuses unsigned, tampered and unverifiable packs at boot, with the verification exit code', async () => {
      const { pack, keysFile } = await signedCopy();
      const state = stateDir();
      const args = (dir: string, ...rest: string[]) => [
        'sandbox',
        '--agent',
        dir,
        '--stdio',
        '--state-dir',
        state,
        '--require-signed-pack',
        ...rest,
      ];
      const unsigned = packwarden(args(probePack, '--keys', keysFile));
      expect(unsigned.status).toBe(3);
      const noRoot = packwarden(args(pack));
      expect(noRoot.status).toBe(5);
      writeFileSync(
        join(pack, 'engines', 'probe', 'probe.mjs'),
        'export class ProbeEngine { run() {} }\n',
      );
      const tampered = packwarden(args(pack, '--keys', keysFile));
      expect(tampered.status).toBe(1);
      expect(tampered.stderr).toContain('invalid');
      const viaEnv = packwarden(
        ['sandbox', '--agent', probePack, '--stdio', '--state-dir', state],
        {
          ...baseEnv(),
          PACKWARDEN_REQUIRE_SIGNED_PACK: '1',
          PACKWARDEN_PACK_SIGNING_KEYS: readFileSync(keysFile, 'utf8'),
        },
      );
      expect(viaEnv.status).toBe(3);
    });
  });
});

// Attacks on the sandbox service and the run driver (docs/sandbox.md; issue 9).
function dir(): string {
  return realpathSync(tempDir());
}

function writeTree(root: string, files: Record<string, string>): string {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

/** A pack run by `exec`: `run.sh` (a shell script) with the given body. */
function execPack(root: string, name: string, body: string): string {
  const pack = writeTree(join(root, name), {
    'agent.yaml': `apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: ${name}, version: 1.0.0}\nspec:\n  engine: exec\n  exec: {command: [./run.sh]}\n`,
    'run.sh': `#!/bin/sh\ncat > /dev/null\n${body}\n`,
  });
  chmodSync(join(pack, 'run.sh'), 0o755);
  return pack;
}

async function keysFor(pack: string): Promise<string> {
  const keyDir = dir();
  const keyFile = join(keyDir, 'key.pem');
  const keygen = await cli(['pack', 'keygen', '--kid', 'attack-test', '-o', keyFile, '--json']);
  const keysFile = join(keyDir, 'keys.json');
  writeFileSync(
    keysFile,
    JSON.stringify({ 'attack-test': JSON.parse(keygen.stdout).publicKeyPem }),
  );
  expect((await cli(['pack', 'sign', pack, '--key', keyFile, '--kid', 'attack-test'])).code).toBe(
    0,
  );
  return keysFile;
}

describe('what may load under a required signature', () => {
  test('an unsigned pack run first under the same name cannot plant an engine the later signed run loads', async () => {
    const home = dir();
    const canary = join(dir(), 'ghost-ran');
    const env = { ...baseEnv(), PACKWARDEN_HOME: home };
    // The unsigned "twin" plants an engine in whatever PACKWARDEN_HOME its sandbox has.
    const planter = execPack(
      dir(),
      'twin',
      `mkdir -p "$PACKWARDEN_HOME/engines/ghost"
printf '%s' '{"version":2,"id":"ghost","entry":"ghost.mjs","engineExport":"Ghost"}' > "$PACKWARDEN_HOME/engines/ghost/engine.manifest.json"
printf '%s\\n' "import { writeFileSync } from 'node:fs'; writeFileSync('${canary}', 'ran'); export class Ghost { async run(turn) { writeFileSync('${canary}', 'ran'); await turn.emitter.text('ghost'); } }" > "$PACKWARDEN_HOME/engines/ghost/ghost.mjs"
echo '{"type":"text","delta":"planted"}'`,
    );
    // Confined, the planter cannot even reach <state>/packwarden (docs/sandbox.md, "State"):
    // nothing lands on the host.
    const confined = packwarden(['run', planter, 'plant', '--isolation', 'required'], env);
    expect(confined.stdout).toContain('planted');
    const [confinedState] = readdirSync(join(home, 'sandbox'));
    expect(
      existsSync(join(home, 'sandbox', confinedState as string, 'packwarden', 'engines', 'ghost')),
    ).toBe(false);
    rmSync(join(home, 'sandbox'), { recursive: true, force: true });
    // Unconfined it can: the signed run must still refuse what it planted.
    const planted = packwarden(['run', planter, 'plant', '--isolation', 'off'], env);
    expect(planted.stdout).toContain('planted');
    expect(planted.status).toBe(0);
    const [plantedState] = readdirSync(join(home, 'sandbox'));
    expect(
      existsSync(join(home, 'sandbox', plantedState as string, 'packwarden', 'engines', 'ghost')),
    ).toBe(true);

    const signed = writeTree(join(dir(), 'twin'), {
      'agent.yaml':
        'apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: twin, version: 1.0.0}\nspec: {engine: ghost}\n',
    });
    const keysFile = await keysFor(signed);
    const run = packwarden(['run', signed, 'hi', '--require-signed-pack', '--keys', keysFile], env);
    expect(run.status).not.toBe(0);
    expect(existsSync(canary)).toBe(false);
    expect(readdirSync(join(home, 'sandbox'))).toHaveLength(2);

    // Planted straight into the signed run's own state: `run` looks for installed engines in the
    // user's PACKWARDEN_HOME (--engine-home), never in a sandbox state, so it is not even found
    // (the sandbox's own refusal of an unverified engine there: packages/sandbox engine tests).
    const [signedState] = readdirSync(join(home, 'sandbox')).filter(
      (name) => name !== plantedState,
    );
    const ghostDir = join(home, 'sandbox', signedState as string, 'packwarden', 'engines', 'ghost');
    cpSync(
      join(home, 'sandbox', plantedState as string, 'packwarden', 'engines', 'ghost'),
      ghostDir,
      {
        recursive: true,
      },
    );
    const refused = packwarden(
      ['run', signed, 'hi', '--require-signed-pack', '--keys', keysFile],
      env,
    );
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('no engine "ghost"');
    expect(refused.stderr).not.toContain(ghostDir);
    expect(existsSync(canary)).toBe(false);
  });
});

describe('the workspace sync', () => {
  test('a workspace whose .packwarden links outside is refused; the outside folder is untouched', () => {
    const workspace = dir();
    const outside = writeTree(join(dir(), 'outside'), { 'agents/probe-pack/keep.txt': 'mine' });
    symlinkSync(outside, join(workspace, '.packwarden'));
    const result = packwarden([
      'run',
      probePack,
      'report',
      '--workspace',
      workspace,
      '--state-dir',
      dir(),
    ]);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('symlink');
    expect(readdirSync(join(outside, 'agents', 'probe-pack'))).toEqual(['keep.txt']);
  });

  test('run <name> --workspace . with the pack in ./.packwarden/agents/ is refused and the pack is intact', () => {
    const workspace = dir();
    const pack = join(workspace, '.packwarden', 'agents', 'probe-pack');
    cpSync(probePack, pack, { recursive: true });
    const before = readdirSync(pack, { recursive: true }).sort();
    const result = packwarden(
      ['run', 'probe-pack', 'report', '--workspace', '.', '--state-dir', dir()],
      baseEnv(),
      workspace,
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('overlap');
    expect(readdirSync(pack, { recursive: true }).sort()).toEqual(before);
  });

  test('run ./p --workspace ./p is refused: nothing is copied into the pack', () => {
    const root = dir();
    const pack = join(root, 'p');
    cpSync(probePack, pack, { recursive: true });
    const result = packwarden(
      ['run', './p', 'report', '--workspace', './p', '--state-dir', dir()],
      baseEnv(),
      root,
    );
    expect(result.status).toBe(1);
    expect(existsSync(join(pack, '.packwarden'))).toBe(false);
  });
});

describe('the environment of engine children', () => {
  test('packwarden sandbox passes no host secret to an exec command', async () => {
    const pack = execPack(
      dir(),
      'env-dump',
      `printf '{"type":"text","delta":"%s"}\\n' "$(env | cut -d= -f1 | sort | tr '\\n' ' ')"`,
    );
    const sandbox = startSandbox(['--agent', pack, '--state-dir', dir()], {
      ...baseEnv(),
      AWS_SECRET_ACCESS_KEY: 'aws-secret-value-123',
      GITHUB_TOKEN: 'ghp_secretvalue123',
      NPM_TOKEN: 'npm-secret-456',
      PACKWARDEN_PACK_SIGNING_KEYS: '{}',
    });
    const names = textOf((await sandbox.run({ message: 'env' })).events)
      .trim()
      .split(' ');
    await sandbox.client.shutdown();
    expect(names).toContain('PATH');
    expect(names).toContain('PACKWARDEN_RUN_ID');
    for (const secret of [
      'AWS_SECRET_ACCESS_KEY',
      'GITHUB_TOKEN',
      'NPM_TOKEN',
      'PACKWARDEN_PACK_SIGNING_KEYS',
    ])
      expect(names).not.toContain(secret);
  });
});

describe('the environment of custom engines', () => {
  test('a custom engine (out of process) sees the same allow-list: no host secret', async () => {
    const sandbox = startSandbox(['--agent', probePack, '--state-dir', dir()], {
      ...baseEnv(),
      AWS_SECRET_ACCESS_KEY: 'aws-secret-value-123',
      GITHUB_TOKEN: 'ghp_secretvalue123',
      PACKWARDEN_PACK_SIGNING_KEYS: '{}',
    });
    const names = textOf((await sandbox.run({ message: 'env-names' })).events).split(' ');
    await sandbox.client.shutdown();
    expect(names).toContain('PATH');
    expect(names).toContain('PACKWARDEN_SANDBOX');
    for (const secret of ['AWS_SECRET_ACCESS_KEY', 'GITHUB_TOKEN', 'PACKWARDEN_PACK_SIGNING_KEYS'])
      expect(names).not.toContain(secret);
  });
});

describe('the model token of run', () => {
  const report = (stdout: string) =>
    JSON.parse(
      stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { type: string; delta?: string })
        .filter((frame) => frame.type === 'text')
        .map((frame) => frame.delta)
        .join(''),
    ) as { hasKey: boolean; keyInArgv: boolean; keyInEnv: boolean };

  test('--model-token-file FILE and - (stdin) carry the token without a warning; --model-token on argv warns', () => {
    const token = 'file-model-token-0123456789';
    const file = join(dir(), 'token');
    writeFileSync(file, `${token}\n`, { mode: 0o600 });
    const viaFile = packwarden([
      'run',
      probePack,
      'report',
      '--json',
      '--state-dir',
      dir(),
      '--model-token-file',
      file,
    ]);
    expect(viaFile.status).toBe(0);
    expect(report(viaFile.stdout)).toMatchObject({
      hasKey: true,
      keyInArgv: false,
      keyInEnv: false,
    });
    expect(viaFile.stderr).not.toContain('warning');

    const viaStdin = spawnSync(
      process.execPath,
      [bin, 'run', probePack, 'report', '--json', '--state-dir', dir(), '--model-token-file', '-'],
      { env: baseEnv(), input: `${token}\n`, encoding: 'utf8', timeout: 20_000 },
    );
    expect(viaStdin.status).toBe(0);
    expect(report(viaStdin.stdout).hasKey).toBe(true);

    const onArgv = packwarden([
      'run',
      probePack,
      'report',
      '--json',
      '--state-dir',
      dir(),
      '--model-token',
      token,
    ]);
    expect(onArgv.status).toBe(0);
    expect(onArgv.stderr).toContain('warning: --model-token puts the token on the command line');
    expect(onArgv.stderr).not.toContain(token);
  });

  test('a missing or multi-line token file is a usage error, and the sandbox never starts', () => {
    const state = dir();
    const missing = packwarden([
      'run',
      probePack,
      'report',
      '--state-dir',
      state,
      '--model-token-file',
      join(state, 'nope'),
    ]);
    expect(missing.status).toBe(2);
    const twoLines = join(dir(), 'token');
    writeFileSync(twoLines, 'one\ntwo\n');
    const bad = packwarden([
      'run',
      probePack,
      'report',
      '--state-dir',
      state,
      '--model-token-file',
      twoLines,
    ]);
    expect(bad.status).toBe(2);
    expect(existsSync(join(state, 'workspace'))).toBe(false);
  });
});

describe('PACKWARDEN_REQUIRE_SIGNED_PACK', () => {
  test.each(['required', 'y', 'enabled'])(
    '=%s is exit 2 for sandbox and run, never "off"',
    (value) => {
      const state = dir();
      const env = { ...baseEnv(), PACKWARDEN_REQUIRE_SIGNED_PACK: value };
      const sandbox = packwarden(
        ['sandbox', '--agent', probePack, '--stdio', '--state-dir', state],
        env,
      );
      expect(sandbox.status).toBe(2);
      expect(sandbox.stderr).toContain('PACKWARDEN_REQUIRE_SIGNED_PACK');
      const run = packwarden(['run', probePack, 'report', '--state-dir', state], env);
      expect(run.status).toBe(2);
      expect(existsSync(join(state, 'workspace'))).toBe(false);
    },
  );
});

describe('socket mode: engines belong to one session', () => {
  test('a second session with another token does not dispose the engine the first is using mid-turn', async () => {
    const state = dir();
    const socket = join(state, 'run.sock');
    const server = startCli([
      'sandbox',
      '--agent',
      probePack,
      '--socket',
      socket,
      '--state-dir',
      state,
    ]);
    try {
      await until(() => server.out.stderr.includes('listening on'), 15_000, 'the socket');
      const first = (await connectRunnerSocket(socket)).client;
      const second = (await connectRunnerSocket(socket)).client;
      let sleeping = false;
      const controller = new AbortController();
      const busy = first.run(
        { message: 'sleep', modelToken: 'token-of-session-one' },
        { signal: controller.signal, onEvent: (event) => (sleeping ||= event.type === 'text') },
      );
      await until(() => sleeping, 15_000, 'the first turn to start');
      const events: string[] = [];
      const other = await second.run(
        { message: 'report', modelToken: 'token-of-session-two' },
        { onEvent: (event) => event.type === 'text' && events.push(event.delta) },
      ).outcome;
      expect(other).toMatchObject({ type: 'result', stopReason: 'end_turn' });
      expect(JSON.parse(events.join(''))).toMatchObject({ hasKey: true });
      // The first turn is still running on its own engine: it ends the way a cancel ends it.
      controller.abort();
      expect(await busy.outcome).toMatchObject({ type: 'result', stopReason: 'cancelled' });
      await first.shutdown();
      await second.shutdown();
    } finally {
      server.child.kill('SIGTERM');
      await server.exit;
    }
  });
});

describe('confinement (--isolation)', () => {
  const noBwrapEnv = () => ({ ...baseEnv(), PATH: '/nonexistent-bin' });

  /** An exec pack that reports whether it can read `file` and leaves a canary in its workspace. */
  function readerPack(file: string): string {
    return execPack(
      dir(),
      'reader',
      `touch ran-canary 2>/dev/null
if cat '${file}' > /dev/null 2>&1; then v=readable; else v=unreadable; fi
echo "{\\"type\\":\\"text\\",\\"delta\\":\\"$v\\"}"`,
    );
  }

  test('required without bubblewrap exits 8 before any pack code runs, naming the guarantee', () => {
    const secret = join(dir(), 'host-secret.txt');
    writeFileSync(secret, 'host secret');
    const state = dir();
    const result = packwarden(
      [
        'sandbox',
        '--agent',
        readerPack(secret),
        '--stdio',
        '--state-dir',
        state,
        '--isolation',
        'required',
      ],
      noBwrapEnv(),
    );
    expect(result.status).toBe(8);
    expect(result.stderr).toMatch(/fs-read|fs-write|network|processes/);
    expect(existsSync(join(state, 'workspace', 'ran-canary'))).toBe(false);
    const viaRun = packwarden(['run', readerPack(secret), 'hi', '--state-dir', dir()], {
      ...noBwrapEnv(),
      PACKWARDEN_ISOLATION: 'required',
    });
    expect(viaRun.status).toBe(8);
  });

  test('auto without bubblewrap runs and says so once: stderr and warning{isolation_degraded}', async () => {
    const sandbox = startSandbox(['--agent', probePack, '--state-dir', dir()], noBwrapEnv());
    const first = await sandbox.run({ message: 'hello' });
    const second = await sandbox.run({ message: 'again' });
    await sandbox.client.shutdown();
    const warnings = [...first.events, ...second.events].filter(
      (event) => event.type === 'warning' && event.code === 'isolation_degraded',
    );
    expect(warnings).toHaveLength(1);
    expect(sandbox.stderr().match(/isolation is degraded/g)).toHaveLength(1);
  });

  test('an unknown PACKWARDEN_ISOLATION is exit 2, never a fallback', () => {
    const env = { ...baseEnv(), PACKWARDEN_ISOLATION: 'strict' };
    expect(
      packwarden(['sandbox', '--agent', probePack, '--stdio', '--state-dir', dir()], env).status,
    ).toBe(2);
    expect(packwarden(['run', probePack, 'hi', '--state-dir', dir()], env).status).toBe(2);
    expect(packwarden(['run', probePack, 'hi', '--isolation', 'strict']).status).toBe(2);
  });

  test('sandbox doctor --json: the documented shape; exit 8 when bubblewrap is missing', () => {
    const missing = packwarden(['sandbox', 'doctor', '--json'], noBwrapEnv());
    expect(missing.status).toBe(8);
    const report = JSON.parse(missing.stdout) as {
      schemaVersion: number;
      guarantees: { id: string; status: string }[];
    };
    expect(report.schemaVersion).toBe(1);
    expect(report.guarantees.map((g) => g.id).sort()).toEqual([
      'fs-read',
      'fs-write',
      'network',
      'processes',
    ]);
    expect(report.guarantees.every((g) => g.status === 'unavailable')).toBe(true);
  });

  const doctor = packwarden(['sandbox', 'doctor', '--json']);
  const confinable = doctor.status === 0;

  test('sandbox doctor here: exit 0 and every guarantee enforced, or exit 8 naming what is not', () => {
    const report = JSON.parse(doctor.stdout) as { guarantees: { status: string }[] };
    expect(doctor.status).toBe(report.guarantees.every((g) => g.status === 'enforced') ? 0 : 8);
  });

  test('every engine child goes through the wrapper: exec and custom engines cannot read a host file outside', async () => {
    // Where bubblewrap cannot confine (the doctor said so), required must refuse instead.
    const secret = join(dir(), 'host-secret.txt');
    writeFileSync(secret, 'host secret');
    const modes = confinable ? ['required', 'off'] : ['off'];
    for (const mode of modes) {
      const expected = mode === 'off' ? 'readable' : 'unreadable';
      const exec = startSandbox([
        '--agent',
        readerPack(secret),
        '--state-dir',
        dir(),
        '--isolation',
        mode,
      ]);
      expect(textOf((await exec.run({ message: 'x' })).events).trim()).toBe(expected);
      await exec.client.shutdown();
      const custom = startSandbox([
        '--agent',
        probePack,
        '--state-dir',
        dir(),
        '--isolation',
        mode,
      ]);
      expect(textOf((await custom.run({ message: `read:${secret}` })).events)).toBe(expected);
      await custom.client.shutdown();
    }
  });
});

describe('socket mode: a live socket is never taken over', () => {
  test('a second sandbox on the same socket refuses (exit 1) and the first keeps serving', async () => {
    const state = dir();
    const socket = join(state, 'live.sock');
    const first = startCli([
      'sandbox',
      '--agent',
      probePack,
      '--socket',
      socket,
      '--state-dir',
      state,
    ]);
    try {
      await until(() => first.out.stderr.includes('listening on'), 15_000, 'the socket');
      const second = packwarden([
        'sandbox',
        '--agent',
        probePack,
        '--socket',
        socket,
        '--state-dir',
        dir(),
      ]);
      expect(second.status).toBe(1);
      expect(second.stderr).toContain('another host is serving');
      const { client } = await connectRunnerSocket(socket);
      const events: string[] = [];
      const outcome = await client.run(
        { message: 'ping' },
        { onEvent: (event) => event.type === 'text' && events.push(event.delta) },
      ).outcome;
      expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
      expect(events.join('')).toBe('echo:ping');
      await client.shutdown();
    } finally {
      first.child.kill('SIGTERM');
      expect(await first.exit).toBe(0);
    }
    expect(existsSync(socket)).toBe(false);
  });

  test('a socket inside the workspace or <state>/engine is refused (ERR_SOCKET_EXPOSED, exit 1): no socket, no pack code run', () => {
    const state = dir();
    for (const socket of [
      join(state, 'workspace', 'frames.sock'),
      join(state, 'engine', 'f.sock'),
    ]) {
      const refused = packwarden([
        'sandbox',
        '--agent',
        probePack,
        '--socket',
        socket,
        '--state-dir',
        state,
      ]);
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain('where pack code could connect to it');
      expect(existsSync(socket)).toBe(false);
      // Refused before boot: the pack was never synced into the workspace.
      expect(existsSync(join(state, 'workspace', '.packwarden'))).toBe(false);
    }
  });
});

describe('the trust root of a sandbox', () => {
  test('no disk cache under the state dir: a JWKS fetched at one boot is not reused when the server is gone', async () => {
    const { createServer } = await import('node:http');
    const keyDir = dir();
    const keygen = JSON.parse(
      (await cli(['pack', 'keygen', '--kid', 'jwks-test', '-o', join(keyDir, 'key.pem'), '--json']))
        .stdout,
    ) as { publicJwk: object; thumbprint: string };
    const pack = join(dir(), 'probe-pack');
    cpSync(probePack, pack, { recursive: true });
    expect(
      (await cli(['pack', 'sign', pack, '--key', join(keyDir, 'key.pem'), '--kid', 'jwks-test']))
        .code,
    ).toBe(0);
    const server = createServer((_request, response) => {
      response.setHeader('content-type', 'application/json');
      response.setHeader('cache-control', 'max-age=3600');
      response.end(JSON.stringify({ keys: [keygen.publicJwk] }));
    });
    await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
    const { port } = server.address() as { port: number };
    const url = `http://127.0.0.1:${port}/jwks.json`;
    const state = dir();
    const args = [
      'sandbox',
      '--agent',
      pack,
      '--stdio',
      '--state-dir',
      state,
      '--require-signed-pack',
    ];
    const trust = ['--jwks', url, '--pin', keygen.thumbprint];
    try {
      const booted = startSandbox([
        '--agent',
        pack,
        '--state-dir',
        state,
        '--require-signed-pack',
        ...trust,
      ]);
      expect((await booted.run({ message: 'hi' })).outcome.type).toBe('result');
      await booted.client.shutdown();
      expect(await booted.exit).toBe(0);
    } finally {
      await new Promise((closed) => server.close(closed));
    }
    const files = readdirSync(state, { recursive: true, encoding: 'utf8' });
    expect(files.filter((file) => file.includes('trust-root'))).toEqual([]);
    // The server is gone: without a cache there is nothing to verify against (exit 6).
    const offline = packwarden([...args, ...trust]);
    expect(offline.status).toBe(6);
  });
});
