import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { parsePackManifest, type AgentManifest } from '@packwarden/pack-manifest';
import type { RunEvent } from '@packwarden/runner-host';
import { afterEach, beforeAll, expect } from 'vitest';
import { createClaudeEngine, createCodexEngine, type CommandWrapper } from '../src/index.js';
import {
  startFakeModelServer,
  type FakeModelServer,
  type ModelScript,
} from './fake-model-server.js';
import { cleanTemps, session, tempDir } from './helpers.js';

/** The token the run frame carries: it must reach the fake model server and nothing else. */
export const REAL_TOKEN = 'sk-real-model-token-7f3a9c1e5b';

const packageDir = new URL('..', import.meta.url).pathname;

/**
 * The native CLI each SDK runs, resolved the way the SDK does (from the SDK's own folder). The
 * real-CLI tests fail here, naming the package, when the workspace install dropped it.
 */
export function nativeCli(engine: 'claude' | 'codex'): string {
  // Each SDK looks for its native package next to itself (pnpm: in its own node_modules).
  const chain =
    engine === 'claude'
      ? ['@anthropic-ai/claude-agent-sdk', '@anthropic-ai/claude-agent-sdk-linux-x64']
      : ['@openai/codex-sdk', '@openai/codex', '@openai/codex-linux-x64'];
  let dir = packageDir;
  for (const name of chain) {
    const here = join(dir, 'node_modules', name);
    const next = existsSync(here) ? realpathSync(here) : undefined;
    if (next === undefined) {
      throw new Error(
        `the ${engine} engine's native CLI for linux-x64 is not installed (${name} not found from ${dir}): run pnpm install without dropping it (pnpm-workspace.yaml ignoredOptionalDependencies)`,
      );
    }
    // The next package sits in the node_modules folder that holds this one.
    dir = name.startsWith('@') ? dirname(dirname(dirname(next))) : dirname(dirname(next));
    if (name === chain.at(-1)) return next;
  }
  throw new Error('unreachable');
}

const stateTemps: string[] = [];

/**
 * A state dir outside /tmp: codex's Linux sandbox mounts its own /tmp, which would hide the
 * helper it starts from CODEX_HOME (packwarden's state lives under $PACKWARDEN_HOME, not /tmp).
 */
export function stateDir(): string {
  const root = '/var/tmp';
  mkdirSync(root, { recursive: true });
  const dir = mkdtempSync(join(root, 'pw-engines-state-'));
  stateTemps.push(dir);
  return dir;
}

export function cleanStateDirs(): void {
  stateTemps.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true }));
}

/** Every file under `dir` whose bytes contain `needle` (the token left on disk?). */
export function filesContaining(dir: string, needle: string): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const child = join(path, entry.name);
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile() && readFileSync(child).includes(needle)) found.push(child);
    }
  };
  walk(dir);
  return found;
}

/** A pack folder with a system prompt file and an `AGENTS.md`, and its manifest. */
export function promptPack(
  engine: 'claude' | 'codex',
  system: string,
  agents: string,
): { packDir: string; manifest: AgentManifest } {
  const packDir = tempDir();
  const yaml = `apiVersion: agenthippo.ai/v1
kind: Agent
metadata: {name: prompt-pack, version: 1.0.0}
spec:
  engine: ${engine}
  prompts: {system: prompts/system.md}
  permissions: {fileAccess: workspace-write}
`;
  writeFileSync(join(packDir, 'agent.yaml'), yaml);
  mkdirSync(join(packDir, 'prompts'));
  writeFileSync(join(packDir, 'prompts', 'system.md'), system);
  writeFileSync(join(packDir, 'AGENTS.md'), agents);
  return { packDir, manifest: parsePackManifest(yaml) };
}

/**
 * A command wrapper (the confinement seam) that records each command it starts in a host-side
 * log and marks the environment, then runs the command as given.
 */
export function recordingWrapper(): { wrap: CommandWrapper; log: () => string[] } {
  const logFile = join(tempDir(), 'wrapped.log');
  return {
    wrap: (command) => ({
      file: '/bin/sh',
      args: [
        '-c',
        'printf "%s\\n" "$1" >> "$PW_TEST_WRAP_LOG"; exec "$@"',
        'sh',
        command.file,
        ...command.args,
      ],
      cwd: command.cwd,
      env: { ...command.env, PW_TEST_WRAPPED: '1', PW_TEST_WRAP_LOG: logFile },
    }),
    log: () =>
      existsSync(logFile) ? readFileSync(logFile, 'utf8').trim().split('\n').filter(Boolean) : [],
  };
}

const servers: FakeModelServer[] = [];

/**
 * The hooks of a real-CLI test file: the engine's native CLI is installed (or every test fails
 * naming the missing package); model servers, temp dirs and state dirs go after each test.
 */
export function realCliSuite(engine: 'claude' | 'codex'): void {
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
    cleanTemps();
    cleanStateDirs();
  });
  beforeAll(() => {
    nativeCli(engine);
  });
}

/** A fake model server on loopback, closed after the test. */
export async function fakeModelServer(script: ModelScript): Promise<FakeModelServer> {
  const server = await startFakeModelServer(script);
  servers.push(server);
  return server;
}

export interface RealCliTurnOptions {
  /** The model's script, given the turn's workspace. */
  reply: (workspace: string) => ModelScript;
  fileAccess?: 'read-only' | 'workspace-write' | 'full';
  /** Appended to the server root in the run's `baseUrl` (`/v1`, …). */
  baseUrlSuffix?: string;
  pack?: { packDir: string; manifest: AgentManifest };
  wrap?: CommandWrapper;
  confinedWrites?: boolean;
  onModelOrigin?: (origin: string) => void;
  /** A run without `modelToken` (a local server that needs none). */
  withoutToken?: boolean;
}

const MODEL_IDS = { claude: 'claude-sonnet-4-5', codex: 'gpt-5.2-codex' } as const;

/**
 * One turn of the engine on its real CLI, against a fake model server on loopback, with the run's
 * token `REAL_TOKEN`; the session is closed when the turn has ended.
 */
export async function realCliTurn(engine: 'claude' | 'codex', options: RealCliTurnOptions) {
  const runtime = { workspaceRoot: tempDir(), stateDir: stateDir() };
  const server = await fakeModelServer(options.reply(runtime.workspaceRoot));
  const engineOptions = {
    pack: {
      id: 'real-pack',
      version: '1.0.0',
      fileAccess: options.fileAccess ?? 'workspace-write',
    },
    baseEnv: { PATH: process.env.PATH, HOME: tempDir() },
    ...(options.pack ?? {}),
    ...(options.wrap !== undefined ? { wrap: options.wrap } : {}),
    ...(options.confinedWrites !== undefined ? { confinedWrites: options.confinedWrites } : {}),
    ...(options.onModelOrigin !== undefined ? { onModelOrigin: options.onModelOrigin } : {}),
  };
  const packEngine =
    engine === 'claude'
      ? await createClaudeEngine(engineOptions)
      : await createCodexEngine(engineOptions);
  const s = session(packEngine, runtime);
  const { events, outcome } = await s.run({
    message: 'hello from the test',
    baseUrl: `${server.url}${options.baseUrlSuffix ?? ''}`,
    ...(options.withoutToken === true ? {} : { modelToken: REAL_TOKEN }),
    modelId: MODEL_IDS[engine],
  });
  await s.close();
  return { server, runtime, events, outcome };
}

export const toolEnds = (events: RunEvent[]) =>
  events.filter(
    (event): event is Extract<RunEvent, { type: 'tool_end' }> => event.type === 'tool_end',
  );

/** The server got model requests, all on `path`, none of them with a credential. */
export function expectNoCredentialSent(server: FakeModelServer, path: string): void {
  expect(server.modelRequests().length).toBeGreaterThan(0);
  for (const request of server.modelRequests()) {
    expect(request.path).toBe(path);
    expect(request.headers['x-api-key']).toBeUndefined();
    expect(request.headers.authorization).toBeUndefined();
  }
}
