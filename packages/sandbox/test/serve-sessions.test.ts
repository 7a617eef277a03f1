import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, test } from 'vitest';
import { agentYaml, cleanTemps, tempDir, writeTree } from './helpers.js';
import { WAIT, buildSandbox, session, startSandbox, stopSandboxes } from './sandbox-process.js';

beforeAll(buildSandbox, 120_000);
afterEach(async () => {
  await stopSandboxes();
  cleanTemps();
});

/** The processes whose parent is `pid` (from /proc: the host's view, not the sandbox's). */
function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid …": comm may hold spaces and parentheses, so read after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid === pid) found.push(Number(entry));
  }
  return found;
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + WAIT;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('serveSandbox: one engine instance per socket session (docs/sandbox.md, "Socket mode")', () => {
  test('a session that ends disposes its engine: connections made one after another leave no engine process behind', async () => {
    const root = tempDir();
    const pack = writeTree(join(root, 'pack'), {
      'agent.yaml': agentYaml('greeter', '  engine: greeter\n'),
      'engines/greeter/engine.manifest.json': JSON.stringify({
        version: 2,
        id: 'greeter',
        entry: 'greeter.mjs',
        engineExport: 'Engine',
      }),
      'engines/greeter/greeter.mjs':
        "export class Engine { async run(turn) { await turn.emitter.text('hello'); } }\n",
    });
    const socket = join(root, 'sandbox.sock');
    const sandbox = startSandbox(pack, socket, join(root, 'state'));
    await sandbox.next('listening');
    const pid = sandbox.child.pid as number;

    // A driver (any local user who may connect) that runs a turn and hangs up, again and again:
    // each session's engine runs in a process of its own.
    for (let round = 0; round < 3; round += 1) {
      const peer = await session(socket);
      await peer.send({ type: 'run', runId: `r${round}`, message: 'hi' });
      const end = await peer.waitFor(
        (f) => f.runId === `r${round}` && (f.type === 'result' || f.type === 'failed'),
        WAIT,
        `run r${round} to end`,
      );
      expect(end.type).toBe('result');
      expect(childrenOf(pid).length).toBeGreaterThan(0);
      await peer.send({ type: 'shutdown' });
      await peer.waitFor((f) => f.type === 'bye', WAIT, 'bye');
      await peer.waitClosed(WAIT);
    }
    // Every session has ended: no engine process of theirs may outlive it (the sandbox serves
    // at most 8 sessions at once, and that must bound its processes too).
    await until(() => childrenOf(pid).length === 0, 'the ended sessions’ engine processes to exit');
    expect(childrenOf(pid)).toEqual([]);
    expect(sandbox.child.exitCode).toBeNull();
  }, 60_000);
});

describe('serveSandbox: the workspace is the only folder a turn gets (docs/sandbox.md, "Its workspace is authoritative")', () => {
  test("a run frame's additionalDirectories never reach the engine; the driver is told once per session", async () => {
    const root = tempDir();
    // The engine reports what it was given: claude and codex turn these folders into more
    // places the agent may write (permission rules, writable roots).
    const pack = writeTree(join(root, 'pack'), {
      'agent.yaml': agentYaml(
        'reporter',
        '  engine: reporter\n  permissions:\n    fileAccess: workspace-write\n',
      ),
      'engines/reporter/engine.manifest.json': JSON.stringify({
        version: 2,
        id: 'reporter',
        entry: 'reporter.mjs',
        engineExport: 'Engine',
      }),
      'engines/reporter/reporter.mjs':
        'export class Engine { async run(turn) { await turn.emitter.text(JSON.stringify({ dirs: turn.additionalDirectories, access: turn.permissions.fileAccess })); } }\n',
    });
    const socket = join(root, 'sandbox.sock');
    const sandbox = startSandbox(pack, socket, join(root, 'state'));
    await sandbox.next('listening');

    const outside = tempDir();
    const peer = await session(socket);
    for (const runId of ['a', 'b']) {
      await peer.send({
        type: 'run',
        runId,
        message: 'write into my home',
        additionalDirectories: [outside, '/'],
        permissions: { fileAccess: 'workspace-write' },
      });
      await peer.waitFor(
        (f) => f.runId === runId && (f.type === 'result' || f.type === 'failed'),
        WAIT,
        `run ${runId} to end`,
      );
    }
    for (const runId of ['a', 'b']) {
      const frames = peer.runFrames(runId);
      expect(frames.at(-1)?.type).toBe('result');
      const text = frames
        .filter((f) => f.type === 'text')
        .map((f) => f.delta as string)
        .join('');
      expect(JSON.parse(text)).toEqual({ dirs: [], access: 'workspace-write' });
    }
    const warnings = [...peer.runFrames('a'), ...peer.runFrames('b')].filter(
      (f) => f.type === 'warning' && f.code === 'additional_directories_ignored',
    );
    expect(warnings).toHaveLength(1);
  }, 60_000);
});
