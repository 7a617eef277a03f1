import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { loadPackManifest } from '@packwarden/pack-manifest';
import { afterEach, describe, expect, test } from 'vitest';
import { confineSandbox, createSandboxState, type SandboxConfinement } from '../../src/index.js';
import { agentYaml, cleanTemps, tempDir, writeTree } from '../helpers.js';

// docs/sandbox.md, "State": pack code sees `<state>/engine` and nothing else of the state; the
// frame socket and `<state>/packwarden` (installed engines) are beside it. The verdicts are
// host-side: connections the socket server accepted, files on the host's disk.

let confined: SandboxConfinement | undefined;
let server: Server | undefined;
afterEach(async () => {
  await confined?.confinement.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  confined = server = undefined;
  cleanTemps();
});

const ATTACK = `
const net = require('node:net');
const fs = require('node:fs');
const [socket, engines, home] = process.argv.slice(1);
const out = {};
try { fs.mkdirSync(engines + '/ghost', { recursive: true }); fs.writeFileSync(engines + '/ghost/ghost.mjs', 'x'); out.plant = 'written'; }
catch (e) { out.plant = e.code; }
try { fs.writeFileSync(home + '/own-state.txt', 'mine'); out.home = 'written'; } catch (e) { out.home = e.code; }
out.stateSeen = (() => { try { return fs.readdirSync(socket.replace(/\\/[^/]*$/, '')); } catch (e) { return e.code; } })();
const c = net.connect(socket);
c.on('connect', () => { out.socket = 'connected'; c.write('{"type":"hello"}\\n'); setTimeout(() => { console.log(JSON.stringify(out)); process.exit(0); }, 100); });
c.on('error', (e) => { out.socket = e.code; console.log(JSON.stringify(out)); });
`;

function run(file: string, args: string[], cwd: string, env: Record<string, string>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(file, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the state layout under confinement', () => {
  test('confined code cannot reach a frame socket created after it started, nor write into <state>/packwarden/engines; it writes its own <state>/engine', async () => {
    const state = await createSandboxState(tempDir(), undefined);
    const pack = writeTree(join(tempDir(), 'plain'), {
      'agent.yaml': agentYaml('plain', '  engine: exec\n'),
    });
    const { manifest } = loadPackManifest(pack);
    confined = await confineSandbox('required', { packDir: pack, manifest, state }, process.env);
    const engines = join(state.packwardenHome, 'engines');
    mkdirSync(engines, { recursive: true });
    const socketPath = join(state.stateDir, 'sandbox.sock');
    const command = confined.confinement.wrap({
      file: process.execPath,
      args: ['-e', ATTACK, socketPath, engines, state.home],
      cwd: state.workspace,
      env: { PATH: '/usr/bin:/bin', HOME: state.home },
    });
    // The socket appears after the wrapper looked for sockets to mask: only the layout keeps
    // it out of reach.
    const connections: string[] = [];
    server = createServer((conn) => {
      connections.push('accepted');
      conn.on('data', (d: Buffer) => connections.push(d.toString('utf8')));
    });
    await new Promise<void>((resolve) => server!.listen(socketPath, resolve));
    const result = await run(command.file, [...command.args], command.cwd, command.env);
    const report = JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '{}') as Record<
      string,
      unknown
    >;
    expect(report.socket).toBe('ENOENT');
    expect(connections).toEqual([]);
    // Inside, the state's parent may be a throwaway tmpfs (a write "succeeds" there): what
    // counts is the host's folder.
    expect(readdirSync(engines)).toEqual([]);
    expect(existsSync(join(engines, 'ghost'))).toBe(false);
    // The engine's own state is writable (the control: the command did run confined, not fail).
    expect(report.home).toBe('written');
    expect(existsSync(join(state.home, 'own-state.txt'))).toBe(true);
    expect(state.home.startsWith(`${state.engineDir}/`)).toBe(true);
  }, 30_000);
});
