import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanTemps, examplePack, tempDir } from './helpers.js';

const bin = new URL('../dist/bin.js', import.meta.url).pathname;
afterEach(cleanTemps);

function packwarden(args: string[], cwd?: string) {
  return spawnSync(process.execPath, [bin, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, PACKWARDEN_HOME: tempDir() },
  });
}

describe('the built packwarden binary', () => {
  test('digests the example pack and agrees with the in-process CLI', async () => {
    const result = packwarden(['pack', 'digest', examplePack]);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^[0-9a-f]{64} {2}hello-pack@0\.1\.0\n$/);
    const { cli } = await import('./helpers.js');
    expect(result.stdout).toBe((await cli(['pack', 'digest', examplePack])).stdout);
  });

  test('hashes a large pack on worker threads inside the bundle, same digest as one thread', async () => {
    const pack = tempDir();
    writeFileSync(
      join(pack, 'agent.yaml'),
      'apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: many, version: 1.0.0}\n',
    );
    for (let d = 0; d < 30; d++) {
      mkdirSync(join(pack, `d${d}`));
      for (let f = 0; f < 80; f++) writeFileSync(join(pack, `d${d}`, `f${f}`), `${d}/${f}\n`);
    }
    const result = packwarden(['pack', 'digest', pack, '--json']);
    expect(result.status, result.stderr).toBe(0);
    const doc = JSON.parse(result.stdout);
    expect(doc.fileCount).toBe(2401);
    const { computePackDigest } = await import('@packwarden/pack-digest');
    expect(doc.digest).toBe((await computePackDigest(pack, { parallel: 'never' })).digest);
  });

  test('exit codes: 2 for usage, 1 for a missing pack, 0 for --help', () => {
    expect(packwarden(['pack', 'digest']).status).toBe(2);
    const missing = packwarden(['pack', 'info', '/nonexistent/pack']);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('packwarden: no pack folder at /nonexistent/pack');
    const help = packwarden(['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('Usage: packwarden');
  });
});
