import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, test } from 'vitest';
import { agentYaml, cleanTemps, tempDir, writeTree } from './helpers.js';
import { WAIT, buildSandbox, session, startSandbox, stopSandboxes } from './sandbox-process.js';

beforeAll(buildSandbox, 120_000);
afterEach(async () => {
  await stopSandboxes();
  cleanTemps();
});

const TOKEN = 'sk-live-victim-session-token-0123456789';

describe('serveSandbox: secrets on stderr (docs/sandbox.md, "Engine output never reaches the protocol channel")', () => {
  test("another connection's runs cannot evict a running turn's token from the stderr scrubber", async () => {
    const root = tempDir();
    // A turn holds while HOLD says so; every other turn ends at once.
    const pack = writeTree(join(root, 'pack'), {
      'agent.yaml': agentYaml(
        'holder',
        `  engine: exec\n  exec:\n    command: [sh, -c, 'if [ "$HOLD" = "hold-the-turn" ]; then sleep 20; fi; echo done']\n`,
      ),
    });
    const socket = join(root, 'sandbox.sock');
    const sandbox = startSandbox(pack, socket, join(root, 'state'));
    await sandbox.next('listening');

    // The victim's turn, with its model token, is running.
    const victim = await session(socket);
    await victim.send({
      type: 'run',
      runId: 'victim',
      message: 'hi',
      modelToken: TOKEN,
      turnEnv: { HOLD: 'hold-the-turn' },
    });
    await victim.waitFor((f) => f.type === 'accepted', WAIT, 'the victim run accepted');

    // Another local user on the same socket: five short runs of 64 secret values each, more
    // than the 256 secrets a set remembers once they are no longer pinned.
    const attacker = await session(socket);
    for (let run = 0; run < 5; run += 1) {
      const turnEnv: Record<string, string> = {};
      for (let i = 0; i < 64; i += 1) turnEnv[`FILL_${i}`] = `filler-${run}-${i}-value`;
      await attacker.send({ type: 'run', runId: `fill-${run}`, message: 'x', turnEnv });
      await attacker.waitFor(
        (f) => f.runId === `fill-${run}` && (f.type === 'result' || f.type === 'failed'),
        WAIT,
        `run fill-${run} to end`,
      );
    }
    expect(victim.runFrames('victim').some((f) => f.type === 'result' || f.type === 'failed')).toBe(
      false,
    );

    // Something in the sandbox process writes the token to stderr while the turn still runs.
    sandbox.child.send(TOKEN);
    await sandbox.next('written');
    const deadline = Date.now() + WAIT;
    while (!sandbox.stderr().includes('in-process write: ') && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 10));

    await victim.send({ type: 'cancel', runId: 'victim' });
    await victim.waitFor((f) => f.runId === 'victim' && f.type === 'result', WAIT, 'cancelled');
    sandbox.child.kill('SIGTERM');
    await new Promise((resolve) => sandbox.child.once('exit', resolve));

    expect(sandbox.stderr()).toContain('in-process write: [redacted]');
    expect(sandbox.stderr()).not.toContain(TOKEN);
  }, 60_000);
});
