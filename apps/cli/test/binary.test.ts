import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanTemps, examplePack, repoRoot, tempDir } from './helpers.js';

const bin = new URL('../dist/bin.cjs', import.meta.url).pathname;
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

describe('licences', () => {
  const dist = new URL('../dist/', import.meta.url).pathname;
  const notices = readFileSync(join(repoRoot, 'apps', 'cli', 'THIRD_PARTY_NOTICES.md'), 'utf8');

  test('THIRD_PARTY_NOTICES.md is what scripts/third-party-notices.mjs makes of this build', () => {
    const check = spawnSync(
      process.execPath,
      [join(repoRoot, 'scripts', 'third-party-notices.mjs'), '--check'],
      { encoding: 'utf8' },
    );
    expect(check.status, check.stderr).toBe(0);
  });

  test('it names exactly the packages in the bundle, each with its licence text', () => {
    // A second reading of the bundle: esbuild's path comments in the built chunks.
    const bundled = new Set<string>();
    for (const file of readdirSync(dist).filter((name) => name.endsWith('.js'))) {
      const text = readFileSync(join(dist, file), 'utf8');
      for (const [, name] of text.matchAll(/^\/\/ .*node_modules\/((?:@[^/]+\/)?[^/.][^/]*)\//gm))
        bundled.add(name!);
    }
    expect(bundled.size).toBeGreaterThan(0);
    const listed = new Set(
      [...notices.matchAll(/^\| ([^ |]+) +\| [^|]+\| [^|]+\|$/gm)]
        .map((row) => row[1]!)
        .filter((name) => name !== 'package' && !name.startsWith('-')),
    );
    expect([...listed].sort()).toEqual([...bundled].sort());
    for (const name of listed) {
      const section = notices.split(/^## /m).find((part) => part.startsWith(`${name}@`));
      expect(section, name).toMatch(/```+text\n[\s\S]*(Permission|Apache License|ISC)[\s\S]*\n```/);
    }
  });

  test('LICENSE (Apache-2.0) at the root and in every published package, listed in its files', () => {
    const apache = readFileSync(join(repoRoot, 'LICENSE'), 'utf8');
    expect(apache).toMatch(/^\s+Apache License\n\s+Version 2\.0, January 2004/);
    expect(apache).toContain('END OF TERMS AND CONDITIONS');
    const folders = [
      ...readdirSync(join(repoRoot, 'packages')).map((name) => join(repoRoot, 'packages', name)),
      join(repoRoot, 'apps', 'cli'),
    ];
    for (const folder of folders) {
      const manifest = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8'));
      expect(manifest.license, folder).toBe('Apache-2.0');
      expect(manifest.files, folder).toContain('LICENSE');
      expect(readFileSync(join(folder, 'LICENSE'), 'utf8'), folder).toBe(apache);
    }
  });

  test('the CLI tarball carries LICENSE and THIRD_PARTY_NOTICES.md (npm pack)', () => {
    const pack = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: join(repoRoot, 'apps', 'cli'),
      encoding: 'utf8',
    });
    expect(pack.status, pack.stderr).toBe(0);
    const files = (
      JSON.parse(pack.stdout) as Array<{ files: Array<{ path: string }> }>
    )[0]!.files.map((file) => file.path);
    expect(files).toEqual(
      expect.arrayContaining(['LICENSE', 'THIRD_PARTY_NOTICES.md', 'dist/bin.cjs']),
    );
  }, 60_000);
});
