import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { repoRoot } from './helpers.js';

// The README's main command runs scripts/demo.mjs after building the CLI (the global setup has
// built it). Each step checks its own outcome and throws when one is wrong.
test('the demo runs end to end', () => {
  const result = spawnSync(process.execPath, [join(repoRoot, 'scripts', 'demo.mjs')], {
    encoding: 'utf8',
    env: { ...process.env, FORCE_COLOR: '0' },
    timeout: 120_000,
  });
  expect(result.status, result.stderr + result.stdout.slice(-2000)).toBe(0);
  expect(result.stdout).toContain('demo complete');
  expect(result.stdout).toMatch(/invalid\s+hello-pack@0\.1\.0 .*\.claude\/hooks\/audit\.sh/);
  expect(result.stdout).toMatch(/digest-unsupported +joker1@0\.1\.3/);
  expect(result.stdout).toContain('I wrote hello.txt in your workspace.');
  // The confined turn: the pack's own words, then the host's verdict.
  expect(result.stdout).toMatch(/cannot see \$DEMO\/private\/id_ed25519/);
  expect(result.stdout).toContain('host check: your file unread');
});
