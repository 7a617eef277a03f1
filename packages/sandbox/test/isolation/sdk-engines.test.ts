import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import {
  connectRunner,
  SecretSet,
  startRunnerHost,
  type RunEvent,
  type RunRequest,
} from '@packwarden/runner-host';
import { afterEach, describe, expect, test } from 'vitest';
import {
  hasToolResult,
  startFakeModelServer,
  type FakeModelServer,
  type ModelReply,
  type ModelRequest,
} from '../../../engines/test/fake-model-server.js';
import {
  applyStateEnvironment,
  confineSandbox,
  createSandboxState,
  engineEnvironment,
  sessionEngine,
  type BootedPack,
  type SandboxState,
} from '../../src/index.js';
import { agentYaml, boot, cleanTemps, tempDir, writeTree } from '../helpers.js';
import { runCommand } from './host-evidence.js';

// The real claude and codex CLIs inside the sandbox's walls (docs/sandbox.md, "Confinement"),
// booted the way `serveSandbox` boots them (`confineSandbox` decides the walls from the
// manifest, `sessionEngine` runs the turns) with isolation `required`, against a fake model
// server on the host's loopback. Verdicts are host-side evidence: host files, the fake server's
// request log, the proxy's decisions, the state folder.

const TOKEN = 'sk-confined-model-token-5d1e9a7c3b';
type Engine = 'claude' | 'codex';
type Reply = (api: 'anthropic' | 'openai', request: ModelRequest) => ModelReply;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  cleanTemps();
});

interface Planted {
  canary: string;
  canaryText: string;
  outsideFile: string;
  hostTmpFile: string;
}

/** Host files the pack must not see or create: a planted secret, a target outside, one in /tmp. */
async function plant(): Promise<Planted> {
  const token = randomBytes(8).toString('hex');
  const outside = join(tempDir(), 'outside');
  await mkdir(outside);
  const canary = join(outside, 'id_ed25519');
  const canaryText = `planted-canary-${token}`;
  await writeFile(canary, canaryText);
  const hostTmpFile = join(tmpdir(), `pw-sdk-escape-${token}`);
  cleanups.push(() => rm(hostTmpFile, { force: true }));
  return { canary, canaryText, outsideFile: join(outside, 'escaped.txt'), hostTmpFile };
}

async function confinedBoot(engine: Engine): Promise<{ booted: BootedPack; state: SandboxState }> {
  const packDir = writeTree(join(tempDir(), 'sdk-pack'), {
    'agent.yaml': agentYaml(
      'sdk-pack',
      `  engine: ${engine}\n  permissions: {fileAccess: workspace-write}\n`,
    ),
    'AGENTS.md': 'PACK-PROMPT-MARKER-2718: be brief.\n',
  });
  const stateDir = tempDir();
  const state = await createSandboxState(stateDir, undefined);
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
  applyStateEnvironment(env, state);
  const result = await boot(packDir, {
    stateDir,
    engineEnv: engineEnvironment(env),
    confine: ({ packDir: dir, manifest }) =>
      confineSandbox('required', { packDir: dir, manifest, state }, process.env),
  });
  cleanups.push(() => result.booted.confinement?.close());
  return result;
}

/** One turn over the real frame protocol, through the sandbox's session engine. */
async function turn(
  { booted, state }: { booted: BootedPack; state: SandboxState },
  request: RunRequest,
): Promise<{ events: RunEvent[]; outcome: unknown }> {
  const engine = sessionEngine(
    booted.engine,
    () => booted.createEngine(),
    state.workspace,
    new SecretSet(),
    {},
  );
  const toHost = new PassThrough();
  const toDriver = new PassThrough();
  const runner = startRunnerHost({
    engine,
    runtime: { workspaceRoot: state.workspace, stateDir: state.engineDir },
    input: toHost,
    output: toDriver,
    cancelGraceMs: 2000,
    kill: (kill) => engine.kill(kill),
  });
  const client = connectRunner({ input: toDriver, output: toHost });
  const events: RunEvent[] = [];
  const handle = client.run(request, { onEvent: (event) => events.push(event) });
  const outcome = await handle.outcome;
  await client.shutdown();
  await runner.done;
  await engine.dispose();
  return { events, outcome };
}

async function server(reply: Reply): Promise<FakeModelServer> {
  const s = await startFakeModelServer(reply);
  cleanups.push(() => s.close());
  return s;
}

const run = (s: FakeModelServer, engine: Engine): RunRequest => ({
  message: 'hello',
  baseUrl: s.url,
  modelToken: TOKEN,
  modelId: engine === 'claude' ? 'claude-sonnet-4-5' : 'gpt-5',
});

/** The model runs `command` once in its shell tool, then answers `done`. */
function shell(engine: Engine, command: string): Reply {
  return (api, request) =>
    hasToolResult(api, request)
      ? { text: 'done' }
      : engine === 'claude'
        ? { tool: { name: 'Bash', input: { command, description: 'probe' } } }
        : { tool: { name: 'exec_command', input: { cmd: command } } };
}

function filesContaining(dir: string, needle: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((path) => {
      try {
        return readFileSync(path).includes(needle);
      } catch {
        return false;
      }
    });
}

describe('claude and codex confined in the sandbox (isolation required)', () => {
  for (const engine of ['claude', 'codex'] as const) {
    test(`${engine}: a text turn completes through the walls; only the turn's model gateway is reached, no outside lookup is even tried`, async () => {
      const sandbox = await confinedBoot(engine);
      expect(sandbox.booted.degraded).toBeUndefined();
      const s = await server(() => ({ text: 'hi from the model' }));
      const { events, outcome } = await turn(sandbox, run(s, engine));
      expect(outcome).toMatchObject({ type: 'result' });
      expect(
        events
          .filter((e) => e.type === 'text')
          .map((e) => e.delta)
          .join(''),
      ).toContain('hi from the model');
      expect(s.modelRequests().length).toBeGreaterThan(0);
      // The pack's prompt crossed the walls with the request.
      expect(s.modelRequests().some((r) => r.raw.includes('PACK-PROMPT-MARKER-2718'))).toBe(true);
      const decisions = sandbox.booted.confinement!.proxyEvents;
      expect(decisions.filter((d) => d.verdict !== 'allowed')).toEqual([]);
      expect(decisions.length).toBeGreaterThan(0);
      for (const decision of decisions)
        expect(decision.target).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(decisions.some((d) => d.target === new URL(s.url).origin)).toBe(false);
    });

    test(`${engine}: a shell command runs in the workspace, and cannot read a planted host file, write outside or into the host /tmp, or see the token`, async () => {
      const planted = await plant();
      const sandbox = await confinedBoot(engine);
      const command = [
        `cat ${planted.canary} 2>&1`,
        `echo escaped > ${planted.outsideFile} 2>&1`,
        `echo escaped > ${planted.hostTmpFile} 2>&1`,
        'pwd > inside.txt',
        'env > env-dump.txt',
        'echo shell-ran',
      ].join('; ');
      const s = await server(shell(engine, command));
      const { outcome } = await turn(sandbox, run(s, engine));
      expect(outcome).toMatchObject({ type: 'result' });
      const { workspace } = sandbox.state;
      expect(readFileSync(join(workspace, 'inside.txt'), 'utf8').trim()).toBe(workspace);
      const dump = readFileSync(join(workspace, 'env-dump.txt'), 'utf8');
      expect(dump).toContain('HOME=');
      expect(dump).not.toContain(TOKEN);
      expect(existsSync(planted.outsideFile)).toBe(false);
      expect(existsSync(planted.hostTmpFile)).toBe(false);
      const results = s
        .modelRequests()
        .filter((r) => hasToolResult(engine === 'claude' ? 'anthropic' : 'openai', r));
      expect(results.length).toBeGreaterThan(0);
      expect(results.some((r) => r.raw.includes('shell-ran'))).toBe(true);
      for (const request of s.requests) {
        expect(request.raw).not.toContain(planted.canaryText);
        expect(request.raw).not.toContain(TOKEN);
      }
      expect(filesContaining(sandbox.state.stateDir, TOKEN)).toEqual([]);
      expect(filesContaining(workspace, TOKEN)).toEqual([]);
    });
  }

  test('claude: its Write tool aimed outside the workspace lands nowhere on the host', async () => {
    const planted = await plant();
    const sandbox = await confinedBoot('claude');
    const s = await server((api, request) =>
      hasToolResult(api, request)
        ? { text: 'done' }
        : {
            tool: { name: 'Write', input: { file_path: planted.outsideFile, content: 'escaped' } },
          },
    );
    const { outcome } = await turn(sandbox, run(s, 'claude'));
    expect(outcome).toMatchObject({ type: 'result' });
    expect(existsSync(planted.outsideFile)).toBe(false);
  });

  test('each turn admits only its own gateway, and only while the turn runs', async () => {
    const sandbox = await confinedBoot('claude');
    const s = await server(() => ({ text: 'one' }));
    await turn(sandbox, run(s, 'claude'));
    await turn(sandbox, run(s, 'claude'));
    const confinement = sandbox.booted.confinement!;
    const allowed = confinement.proxyEvents.filter((d) => d.verdict === 'allowed');
    const gateways = [...new Set(allowed.map((d) => d.target))];
    expect(gateways).toHaveLength(2);
    // After the turns, code inside the walls asking the proxy for the last gateway is refused
    // by the proxy itself (its allow list), not merely by a closed port.
    const probe = [
      "const s = require('net').connect(3128, '127.0.0.1', () =>",
      `  s.write('GET ${gateways[1]}/v1/models HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'));`,
      "s.on('data', (d) => { process.stdout.write(d); s.destroy(); });",
    ].join('\n');
    const before = confinement.proxyEvents.length;
    const result = await runCommand(
      confinement.wrap({
        file: process.execPath,
        args: ['-e', probe],
        cwd: sandbox.state.workspace,
        env: { PATH: '/usr/bin:/bin' },
      }),
    );
    expect(result.stdout).toMatch(/^HTTP\/1\.1 403/);
    expect(confinement.proxyEvents.slice(before)).toEqual([
      expect.objectContaining({ target: gateways[1], verdict: 'denied' }),
    ]);
  });
});
