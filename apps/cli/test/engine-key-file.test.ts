import { chmodSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanTemps, cli, tempDir } from './helpers.js';

afterEach(cleanTemps);

/** A minimal custom engine folder (engine.manifest.json, package.json, entry). */
function writeEngine(dir: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'engine.manifest.json'),
    JSON.stringify({ version: 2, id: 'echo', entry: './engine.mjs', engineExport: 'Engine' }),
  );
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'echo', version: '1.0.0' }));
  writeFileSync(join(dir, 'engine.mjs'), 'export class Engine {}\n');
  return dir;
}

describe('engine sign reads its key through pack-signature, as pack sign does (issue 13 item 3)', () => {
  test('a key others may read, a symlinked key and a missing key: exit 2, the pack sign refusal', async () => {
    const work = tempDir();
    const key = join(work, 'release.pem');
    const made = await cli(['pack', 'keygen', '--kid', 'release', '-o', key]);
    expect(made.code, made.stderr).toBe(0);
    const engine = writeEngine(join(work, 'echo'));
    const pack = join(work, 'pack');

    const cases: Array<{ path: string; hint: RegExp; setup?: () => void }> = [
      { path: key, hint: /chmod 600/, setup: () => chmodSync(key, 0o644) },
      {
        path: join(work, 'link.pem'),
        hint: /pack keygen/,
        setup: () => symlinkSync(key, join(work, 'link.pem')),
      },
      { path: join(work, 'missing.pem'), hint: /pack keygen/ },
    ];
    for (const { path, hint, setup } of cases) {
      setup?.();
      const signed = await cli(['engine', 'sign', engine, '--key', path, '--kid', 'release']);
      expect(signed.code, signed.stderr).toBe(2);
      expect(signed.stderr).toMatch(hint);
      expect(existsSync(join(engine, 'engine.sig'))).toBe(false);
      const json = await cli([
        'engine',
        'sign',
        engine,
        '--key',
        path,
        '--kid',
        'release',
        '--json',
      ]);
      expect(json.code).toBe(2);
      expect(json.stdout + json.stderr).toContain('ERR_CLI_KEY_FILE');
      // The same refusal as `pack sign` (one reading of key files, one message).
      const packSigned = await cli(['pack', 'sign', pack, '--key', path, '--kid', 'release']);
      expect(packSigned.code).toBe(2);
      expect(packSigned.stderr).toBe(signed.stderr);
    }

    chmodSync(key, 0o600);
    const signed = await cli(['engine', 'sign', engine, '--key', key, '--kid', 'release']);
    expect(signed.code, signed.stderr).toBe(0);
    expect(existsSync(join(engine, 'engine.sig'))).toBe(true);
  });
});
