import { realpathSync } from 'node:fs';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanTemps, tempDir } from './helpers.js';
import { fixture, packwarden } from './fixtures/sandbox.js';

afterEach(cleanTemps);

describe('packwarden run --json when the sandbox does not boot', () => {
  test('stdout ends with the error document, whose exit code is the process’s (3: unsigned)', () => {
    const refused = packwarden([
      'run',
      fixture('probe-pack'),
      'x',
      '--json',
      '--state-dir',
      realpathSync(tempDir()),
      '--require-signed-pack',
    ]);
    expect(refused.status, refused.stderr).toBe(3);
    expect(refused.stderr).toContain('unsigned');
    const lines = refused.stdout.trim().split('\n');
    // A script reading the NDJSON stream must see why it ended, never an empty stream.
    const last = JSON.parse(lines.at(-1) ?? 'null') as unknown;
    expect(last).toMatchObject({
      schemaVersion: 1,
      error: { code: 'ERR_CLI_SANDBOX_BOOT' },
      exitCode: 3,
    });
    expect((last as { error: { message: string } }).error.message).toContain(
      "the pack's signature was refused (unsigned)",
    );
  });
});
