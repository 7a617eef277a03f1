import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { engineCliFolders, loadPackEngine, type PackEngine } from '@packwarden/engines';
import { parsePackManifest } from '@packwarden/pack-manifest';
import {
  connectRunner,
  SecretSet,
  startRunnerHost,
  type RunEvent,
  type RunRequest,
} from '@packwarden/runner-host';
import { afterEach, describe, expect, test } from 'vitest';
import {
  startFakeModelServer,
  type FakeModelServer,
} from '../../../engines/test/fake-model-server.js';
import {
  applyStateEnvironment,
  confineSandbox,
  createSandboxState,
  engineEnvironment,
  sessionEngine,
  type SandboxState,
} from '../../src/index.js';
import { createConfinement, type Confinement } from '../../src/isolation/index.js';
import { agentYaml, boot, cleanTemps, tempDir, writeTree } from '../helpers.js';
import { runCommand } from './host-evidence.js';

// Pairs that must agree, attacked with real parts (bubblewrap, real engines, real files): what
// the host executes or hands one command vs what the walls let another confined command write,
// and the file access of a turn vs the walls its commands get.

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  cleanTemps();
});

/** Turns one after another in one session over the real frame protocol (one engine instance). */
async function turns(
  engine: PackEngine,
  runtime: { workspaceRoot: string; stateDir: string },
  requests: RunRequest[],
): Promise<{ events: RunEvent[]; outcome: unknown }[]> {
  const toHost = new PassThrough();
  const toDriver = new PassThrough();
  const runner = startRunnerHost({
    engine,
    runtime,
    input: toHost,
    output: toDriver,
    cancelGraceMs: 2000,
    kill: (request) => engine.kill?.(request),
  });
  const client = connectRunner({ input: toDriver, output: toHost });
  const results: { events: RunEvent[]; outcome: unknown }[] = [];
  for (const request of requests) {
    const events: RunEvent[] = [];
    const outcome = await client.run(request, { onEvent: (event) => events.push(event) }).outcome;
    results.push({ events, outcome });
  }
  await client.shutdown();
  await runner.done;
  return results;
}

const oneTurn = async (
  engine: PackEngine,
  runtime: { workspaceRoot: string; stateDir: string },
  request: RunRequest,
) => (await turns(engine, runtime, [request]))[0]!;

async function confinementFor(
  pack: string,
  fileAccess: 'read-only' | 'workspace-write',
): Promise<{ confinement: Confinement; workspace: string; state: string }> {
  const workspace = tempDir();
  const state = tempDir();
  const confinement = await createConfinement(
    { packDir: pack, workspace, engineStateDir: state, fileAccess, allowOrigins: [] },
    { mode: 'required', runtimeParent: tempDir() },
  );
  cleanups.push(() => confinement.close());
  return { confinement, workspace, state };
}

describe('a turn narrower than the pack gets narrower walls', () => {
  test('exec: a read-only turn of a workspace-write pack cannot write the workspace, whatever the command does', async () => {
    const pack = writeTree(join(tempDir(), 'writer'), {
      'agent.yaml': agentYaml(
        'writer',
        '  engine: exec\n  exec: {command: [./write.sh]}\n  permissions: {fileAccess: workspace-write}\n',
      ),
      // Pack code need not obey PACKWARDEN_FILE_ACCESS: it writes anyway.
      'write.sh':
        '#!/bin/sh\necho "$PACKWARDEN_FILE_ACCESS" > "$PACKWARDEN_WORKSPACE/$PACKWARDEN_RUN_ID.txt" 2>/dev/null\necho \'{"type":"text","delta":"ran"}\'\n',
    });
    chmodSync(join(pack, 'write.sh'), 0o755);
    const { confinement, workspace, state } = await confinementFor(pack, 'workspace-write');
    const engine = await loadPackEngine({
      packDir: pack,
      manifest: parsePackManifest(readFileSync(join(pack, 'agent.yaml'), 'utf8')),
      home: tempDir(),
      env: { PATH: '/usr/bin:/bin' },
      wrap: confinement.wrap,
    });
    const runtime = { workspaceRoot: workspace, stateDir: state };
    const narrowed = await oneTurn(engine, runtime, {
      runId: 'narrowed',
      message: 'x',
      permissions: { fileAccess: 'read-only' },
    });
    expect(narrowed.outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(existsSync(join(workspace, 'narrowed.txt'))).toBe(false);
    // The pack's own level still writes: the walls follow the turn, not a fixed guess.
    const full = await oneTurn(engine, runtime, { runId: 'full', message: 'x' });
    expect(full.outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(readFileSync(join(workspace, 'full.txt'), 'utf8')).toBe('workspace-write\n');
  });

  test('custom engine: its long-lived process does not carry a write-enabled wall into a later read-only turn', async () => {
    const pack = writeTree(join(tempDir(), 'custom-writer'), {
      'agent.yaml': agentYaml(
        'custom-writer',
        '  engine: scribe\n  permissions: {fileAccess: workspace-write}\n',
      ),
      'engines/scribe/engine.manifest.json': JSON.stringify({
        version: 2,
        id: 'scribe',
        entry: 'scribe.mjs',
        engineExport: 'Engine',
      }),
      'engines/scribe/scribe.mjs': [
        "import { writeFileSync } from 'node:fs';",
        "import { join } from 'node:path';",
        'export class Engine {',
        '  async run(turn) {',
        '    const level = turn.permissions.fileAccess;',
        "    let how = 'written';",
        '    try { writeFileSync(join(turn.workspaceRoot, `${level}.txt`), level); }',
        "    catch { how = 'refused'; }",
        '    await turn.emitter.text(`${how} ${level}`);',
        '  }',
        '}',
        '',
      ].join('\n'),
    });
    const { confinement, workspace, state } = await confinementFor(pack, 'workspace-write');
    const engine = await loadPackEngine({
      packDir: pack,
      manifest: parsePackManifest(readFileSync(join(pack, 'agent.yaml'), 'utf8')),
      home: tempDir(),
      env: { PATH: '/usr/bin:/bin' },
      wrap: confinement.wrap,
    });
    cleanups.push(() => engine.dispose?.());
    const runtime = { workspaceRoot: workspace, stateDir: state };
    // One session: the engine's process outlives the first turn.
    const [first, second] = await turns(engine, runtime, [
      { message: 'x' },
      { message: 'x', permissions: { fileAccess: 'read-only' } },
    ]);
    expect(first!.outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(readFileSync(join(workspace, 'workspace-write.txt'), 'utf8')).toBe('workspace-write');
    expect(second!.outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    // Whichever process served the second turn, nothing it wrote reached the host workspace.
    expect(existsSync(join(workspace, 'read-only.txt'))).toBe(false);
  });
});

describe("one command's environment file is out of every other command's reach", () => {
  test('a confined command can neither read nor rewrite the one-use environment of a command that has not started yet', async () => {
    const pack = writeTree(join(tempDir(), 'env-pack'), { 'agent.yaml': 'x' });
    const { confinement, workspace } = await confinementFor(pack, 'workspace-write');
    const secret = `victim-secret-${randomBytes(8).toString('hex')}`;
    // The victim (another session's exec turn) is wrapped: its file waits for it on the host.
    const victim = confinement.wrap({
      file: '/bin/sh',
      args: ['-c', 'echo "token=$PACKWARDEN_MODEL_TOKEN injected=${INJECTED:-no}"'],
      cwd: workspace,
      env: { PATH: '/usr/bin:/bin', PACKWARDEN_MODEL_TOKEN: secret },
    });
    // The attacker, confined by the same walls, reads and rewrites whatever it can find there.
    const attacker = await runCommand(
      confinement.wrap({
        file: '/bin/sh',
        args: [
          '-c',
          'for f in $(find /run/packwarden-env -type f 2>/dev/null); do cat "$f"; echo "export INJECTED=yes" >> "$f"; done; echo attacker-done',
        ],
        cwd: workspace,
        env: { PATH: '/usr/bin:/bin' },
      }),
    );
    expect(attacker.stdout).toContain('attacker-done');
    expect(attacker.stdout).not.toContain(secret);
    const result = await runCommand(victim);
    expect(result.stdout.trim()).toBe(`token=${secret} injected=no`);
  });
});

interface Thread {
  runStreamed(
    input: string,
    options?: { signal?: AbortSignal },
  ): Promise<{ events: AsyncIterable<unknown> }>;
}

describe('the codex launcher the host runs is out of the walls', () => {
  test('a confined process cannot rewrite the launcher between its creation and its use (no code runs on the host)', async () => {
    const stateDir = tempDir();
    const state: SandboxState = await createSandboxState(stateDir, undefined);
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    applyStateEnvironment(env, state);
    const packDir = writeTree(join(tempDir(), 'codex-pack'), {
      'agent.yaml': agentYaml(
        'codex-pack',
        '  engine: codex\n  permissions: {fileAccess: workspace-write}\n',
      ),
    });
    // Where an escaped script would leave its mark: a host folder the walls never show.
    const hostOnly = tempDir();
    const escaped = join(hostOnly, 'escaped');
    const launchers: string[] = [];
    const attacks: string[] = [];
    let confinement: Confinement | undefined;
    // The real Codex SDK; between the launcher's creation and the SDK's spawn of it, a confined
    // process (in a real sandbox: another session's command) rewrites every launcher it can
    // find in what the walls show it.
    const real = (await import(
      pathToFileURL(join(engineCliFolders('codex')[0]!, 'dist', 'index.js')).href
    )) as {
      Codex: new (options: { codexPathOverride?: string }) => { startThread(o: unknown): Thread };
    };
    const attack = [
      `for f in $(find ${state.engineDir} ${state.workspace} -name 'codex-*.sh' 2>/dev/null); do`,
      `  printf '#!/bin/sh\\necho escaped > ${escaped}\\n' > "$f" && echo "rewrote $f";`,
      'done; echo attack-done',
    ].join('\n');
    class AttackedCodex extends real.Codex {
      constructor(options: { codexPathOverride?: string }) {
        super(options);
        if (options.codexPathOverride !== undefined) launchers.push(options.codexPathOverride);
      }
      override startThread(o: unknown): Thread {
        const thread = super.startThread(o);
        return {
          runStreamed: async (input, turnOptions) => {
            const result = await runCommand(
              confinement!.wrap({
                file: '/bin/sh',
                args: ['-c', attack],
                cwd: state.workspace,
                env: { PATH: '/usr/bin:/bin' },
              }),
            );
            attacks.push(result.stdout);
            return thread.runStreamed(input, turnOptions);
          },
        };
      }
    }
    const { booted } = await boot(packDir, {
      stateDir,
      engineEnv: engineEnvironment(env),
      confine: async ({ packDir: dir, manifest }) => {
        const confined = await confineSandbox(
          'required',
          { packDir: dir, manifest, state },
          process.env,
        );
        confinement = confined.confinement;
        return {
          ...confined,
          engineOptions: {
            codex: {
              ...confined.engineOptions?.codex,
              loadSdk: async () => ({ Codex: AttackedCodex }) as never,
            },
          },
        };
      },
    });
    cleanups.push(() => booted.confinement?.close());
    const server: FakeModelServer = await startFakeModelServer(() => ({ text: 'hello' }));
    cleanups.push(() => server.close());
    const engine = sessionEngine(
      booted.engine,
      () => booted.createEngine(),
      state.workspace,
      new SecretSet(),
      {},
    );
    const { outcome } = await oneTurn(
      engine,
      { workspaceRoot: state.workspace, stateDir: state.engineDir },
      { message: 'hi', baseUrl: server.url, modelToken: 'sk-launcher-test', modelId: 'gpt-5' },
    );
    await engine.dispose();
    // Nothing ran on the host but the real launcher: bwrap, then codex inside the walls.
    expect(existsSync(escaped)).toBe(false);
    expect(attacks).toEqual([expect.stringContaining('attack-done')]);
    expect(attacks[0]).not.toContain('rewrote');
    expect(launchers).toHaveLength(1);
    // In the sandbox os.tmpdir() is <state>/engine/tmp, inside the walls: the launcher goes to
    // the confinement's private folder instead.
    expect(launchers[0]!.startsWith(`${confinement!.privateDir!}/`)).toBe(true);
    expect(outcome).toMatchObject({ type: 'result' });
  });
});

describe("the confinement's runtime folder is never inside what the walls show", () => {
  test('a workspace that holds the state folder is refused before anything is confined (no pending secret is readable)', async () => {
    const workspace = tempDir();
    const state = await createSandboxState(join(workspace, 'state'), workspace);
    const packDir = writeTree(join(tempDir(), 'overlap'), {
      'agent.yaml': agentYaml(
        'overlap',
        '  engine: exec\n  permissions: {fileAccess: workspace-write}\n',
      ),
    });
    const manifest = parsePackManifest(readFileSync(join(packDir, 'agent.yaml'), 'utf8'));
    const secret = `pending-secret-${randomBytes(8).toString('hex')}`;
    let verdict: string;
    try {
      const { confinement } = await confineSandbox(
        'required',
        { packDir, manifest, state },
        process.env,
      );
      cleanups.push(() => confinement.close());
      // Another session's command, wrapped and about to start; a confined command looks around.
      confinement.wrap({
        file: '/bin/true',
        args: [],
        cwd: workspace,
        env: { PATH: '/usr/bin:/bin', PACKWARDEN_MODEL_TOKEN: secret },
      });
      const attacker = await runCommand(
        confinement.wrap({
          file: '/bin/sh',
          args: [
            '-c',
            `find ${workspace} -name '*.sh' -path '*pw-confine-*' -exec cat {} + 2>/dev/null`,
          ],
          cwd: workspace,
          env: { PATH: '/usr/bin:/bin' },
        }),
      );
      verdict = attacker.stdout.includes(secret) ? 'leaked' : 'contained';
    } catch (error) {
      verdict = (error as { code?: string }).code ?? String(error);
    }
    expect(verdict).toBe('ERR_ISOLATION_POLICY_INVALID');
  });
});

describe('a node outside the system folders shows only itself', () => {
  test('a lone node binary in ~/bin does not show the home folder around it; node and its npm link still work', async () => {
    // Outside /tmp: every sandbox gets a private /tmp over the host's.
    const home = mkdtempSync('/var/tmp/pw-home-');
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    mkdirSync(join(home, 'bin'));
    mkdirSync(join(home, '.ssh'));
    const secret = `home-secret-${randomBytes(8).toString('hex')}`;
    writeFileSync(join(home, '.ssh', 'id_ed25519'), secret);
    writeTree(join(home, 'lib', 'node_modules', 'npm'), {
      'bin/npm-cli.js': "console.log('npm-ok')\n",
    });
    const node = join(home, 'bin', 'node');
    copyFileSync(process.execPath, node);
    chmodSync(node, 0o755);
    symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(home, 'bin', 'npm'));
    const pack = writeTree(join(tempDir(), 'p'), { 'agent.yaml': 'x' });
    const workspace = tempDir();
    const confinement = await createConfinement(
      {
        packDir: pack,
        workspace,
        engineStateDir: tempDir(),
        fileAccess: 'workspace-write',
        allowOrigins: [],
      },
      // The relay runs on that node, so the sandbox starts only if node works inside.
      { mode: 'required', runtimeParent: tempDir(), nodeBinary: node, relay: 'node' },
    );
    cleanups.push(() => confinement.close());
    const result = await runCommand(
      confinement.wrap({
        file: '/bin/sh',
        args: [
          '-c',
          `cat ${join(home, '.ssh', 'id_ed25519')} 2>/dev/null; ${node} ${join(home, 'bin', 'npm')}; echo done`,
        ],
        cwd: workspace,
        env: { PATH: '/usr/bin:/bin' },
      }),
    );
    expect(result.stdout).toContain('done');
    expect(result.stdout).not.toContain(secret);
    expect(result.stdout).toContain('npm-ok');
  });
});
