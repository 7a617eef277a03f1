import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, test } from 'vitest';
import { agentYaml, cleanTemps, tempDir, writeTree } from './helpers.js';
import { buildSandbox, startSandbox, stopSandboxes } from './sandbox-process.js';

beforeAll(buildSandbox, 120_000);
afterEach(async () => {
  await stopSandboxes();
  cleanTemps();
});

describe('serveSandbox: the frame socket stays out of what pack code sees (docs/sandbox.md, "State")', () => {
  test('a socket path inside the pack folder (shown read-only to confined code, where a socket still accepts connections) is refused before it is bound', async () => {
    const root = tempDir();
    const pack = writeTree(join(root, 'pack'), {
      'agent.yaml': agentYaml(
        'plain',
        '  engine: exec\n  exec:\n    command: [sh, -c, "echo hi"]\n',
      ),
    });
    const socket = join(pack, 'frames.sock');
    const sandbox = startSandbox(pack, socket, join(root, 'state'));
    await expect(sandbox.next('listening')).rejects.toThrow(/inside the pack folder/);
    expect(sandbox.stderr()).toContain('ERR_SOCKET_EXPOSED');
    expect(existsSync(socket)).toBe(false);
  }, 60_000);
});
