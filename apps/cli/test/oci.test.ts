import { chmodSync, existsSync, readFileSync, readdirSync, utimesSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanTemps, cli, copyOfExample, tempDir } from './helpers.js';

afterEach(cleanTemps);

describe('pack export', () => {
  test('same bytes after touch and chmod of the files; installs back with pack install ./x.tgz', async () => {
    const pack = copyOfExample();
    const out = tempDir();
    const first = await cli(['pack', 'export', pack, '-o', join(out, 'a.tgz'), '--json']);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const summary = JSON.parse(first.stdout) as { sha256: string; digest: string; size: number };
    const bytesA = readFileSync(join(out, 'a.tgz'));
    expect(summary.size).toBe(bytesA.length);
    expect(summary.sha256).toBe(createHash('sha256').update(bytesA).digest('hex'));
    expect(summary.digest).toMatch(/^[0-9a-f]{64}$/);

    // Change only metadata: mtimes and (non-executable) permission bits.
    for (const name of readdirSync(pack)) {
      const file = join(pack, name);
      utimesSync(file, new Date(2001, 1, 1), new Date(2001, 1, 1));
    }
    chmodSync(join(pack, 'agent.yaml'), 0o600);
    const second = await cli(['pack', 'export', pack, '-o', join(out, 'b.tgz')]);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain(`sha256 ${summary.sha256}`);
    expect(readFileSync(join(out, 'b.tgz')).equals(bytesA)).toBe(true);

    const to = join(tempDir(), 'installed');
    const installed = await cli(['pack', 'install', join(out, 'a.tgz'), '--to', to, '--json'], {
      cwd: out,
      env: { HOME: '/nonexistent-home' },
    });
    expect(installed.stderr).toBe('');
    expect(installed.code).toBe(0);
    expect(
      (JSON.parse(installed.stdout) as { installed: { digest: string } }).installed.digest,
    ).toBe(summary.digest);
    expect(readFileSync(join(to, 'agent.yaml'))).toEqual(readFileSync(join(pack, 'agent.yaml')));
  });

  test('a folder that is no pack is refused, nothing written', async () => {
    const out = tempDir();
    const result = await cli(['pack', 'export', out, '-o', join(out, 'x.tgz')]);
    expect(result.code).not.toBe(0);
    expect(existsSync(join(out, 'x.tgz'))).toBe(false);
    expect(readdirSync(out)).toEqual([]);
  });
});
