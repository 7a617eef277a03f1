import { mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import {
  hasToolResult,
  startFakeModelServer,
  type FakeModelServer,
} from '../../../packages/engines/test/fake-model-server.js';
import { cleanTemps, tempDir } from './helpers.js';
import { baseEnv, startCli } from './fixtures/sandbox.js';

// `packwarden run` of a claude and a codex pack with `--isolation required`, the built CLI
// against a fake model server on loopback: the CLI confined inside the walls reaches the model
// only through its per-turn gateway (docs/sandbox.md, "claude and codex").

const servers: FakeModelServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  cleanTemps();
});

const TOKEN = 'cli-confined-token-0123456789abcdef';

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

describe('packwarden run --isolation required with the real vendor CLIs', () => {
  for (const engine of ['claude', 'codex'] as const) {
    test(`${engine}: a shell command runs in the workspace inside the walls; the token stays out of it and off the disk`, async () => {
      const server = await startFakeModelServer((api, request) =>
        hasToolResult(api, request)
          ? { text: 'all done' }
          : engine === 'claude'
            ? { tool: { name: 'Bash', input: { command: 'env > env.txt; pwd', description: 'p' } } }
            : { tool: { name: 'exec_command', input: { cmd: 'env > env.txt; pwd' } } },
      );
      servers.push(server);
      const pack = join(tempDir(), `${engine}-pack`);
      const state = realpathSync(tempDir());
      const tokenFile = join(tempDir(), 'token');
      writeFileSync(tokenFile, TOKEN);
      mkdirSync(pack);
      writeFileSync(
        join(pack, 'agent.yaml'),
        `apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: ${engine}-pack, version: 1.0.0}\nspec:\n  engine: ${engine}\n  permissions: {fileAccess: workspace-write}\n`,
      );
      const { out, exit } = startCli(
        [
          'run',
          pack,
          'print your environment',
          '--isolation',
          'required',
          '--state-dir',
          state,
          '--base-url',
          server.url,
          '--model-token-file',
          tokenFile,
          '--model',
          engine === 'claude' ? 'claude-sonnet-4-5' : 'gpt-5',
        ],
        baseEnv(),
      );
      const code = await exit;
      expect(code, out.stderr).toBe(0);
      expect(out.stdout).toContain('all done');
      expect(out.stderr).not.toContain('isolation_degraded');
      const dump = readFileSync(join(state, 'workspace', 'env.txt'), 'utf8');
      expect(dump).toContain('HTTP_PROXY=http://127.0.0.1:3128');
      expect(dump).not.toContain(TOKEN);
      for (const request of server.modelRequests()) expect(request.raw).not.toContain(TOKEN);
      expect(server.modelRequests().length).toBeGreaterThan(1);
      expect(out.stdout + out.stderr).not.toContain(TOKEN);
      expect(filesContaining(state, TOKEN)).toEqual([]);
    });
  }
});
