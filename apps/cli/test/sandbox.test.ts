import { spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
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
    const command = [process.execPath, bin, 'sandbox', '--agent', scriptedPack, '--stdio']
      .concat(['--state-dir', state, '--cancel-grace-ms', '300'])
      .map((part) => JSON.stringify(part))
      .join(' ');
    const report = await runConformance({ stdio: command });
    expect(report.results.filter((r) => !r.ok)).toEqual([]);
    expect(report.results.length).toBeGreaterThanOrEqual(24);
  }, 60_000);

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
      ]),
      { env: baseEnv(), stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => (stderr += chunk));
    await until(() => stderr.includes('listening on'), 10_000, 'the socket');
    const report = await runConformance({ socket });
    expect(report.results.filter((r) => !r.ok)).toEqual([]);
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
    expect(report.env).toEqual({
      HOME: join(state, 'home'),
      PACKWARDEN_HOME: join(state, 'packwarden'),
      PACKWARDEN_SANDBOX: '1',
      XDG_CACHE_HOME: join(state, 'cache'),
      TMPDIR: join(state, 'tmp'),
      homedir: join(state, 'home'),
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
    let pid = 0;
    const controller = new AbortController();
    const cancelled = sandbox.run(
      { message: 'sleep' },
      {
        signal: controller.signal,
        onEvent: (e) => {
          if (e.type === 'text') pid = Number(e.delta.split(' ')[1]);
        },
      },
    );
    await until(() => pid > 0, 10_000, 'the command to start');
    controller.abort();
    expect((await cancelled).outcome).toMatchObject({ type: 'result', stopReason: 'cancelled' });
    // It ignored SIGTERM: the process group's SIGKILL (after half the cancel grace) ended it.
    await until(
      () => {
        try {
          process.kill(pid, 0);
          return false;
        } catch {
          return true;
        }
      },
      2000,
      'the command to be killed',
    );
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
