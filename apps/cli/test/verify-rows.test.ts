import fc from 'fast-check';
import { afterEach, describe, expect, test } from 'vitest';
import { formatVerifyRows, type VerifyRow } from '../src/commands/pack/verify-rows.js';
import { cleanTemps, cli, copyOfExample, tempDir } from './helpers.js';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

afterEach(cleanTemps);

const KINDS = ['verified', 'unsigned', 'invalid', 'untrusted-key', 'trust-root-unavailable'];
const word = (max: number) => fc.stringMatching(new RegExp(`^[a-z0-9][a-z0-9./@-]{0,${max - 1}}$`));
const rowArb: fc.Arbitrary<VerifyRow> = fc.record({
  kind: fc.constantFrom(...KINDS),
  pack: word(120),
  folder: word(200),
  message: fc
    .array(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9 .:,'`-]{0,150}$/), {
      minLength: 1,
      maxLength: 5,
    })
    .map((lines) => lines.join('\n')),
});

/**
 * Reads the output back by column: the pack, folder and message columns start where the first
 * row's head says, each field followed by at least two spaces, every message line under the
 * message column.
 */
function expectLaidOut(rows: readonly VerifyRow[], text: string): void {
  const lines = text.split('\n');
  expect(lines.pop()).toBe('');
  const packWidth = Math.max(...rows.map((row) => row.pack.length));
  const folderWidth = Math.max(...rows.map((row) => row.folder.length));
  const packCol = 22 + 2;
  const folderCol = packCol + packWidth + 2;
  const messageCol = folderCol + folderWidth + 2;
  let at = 0;
  for (const row of rows) {
    const messageLines = row.message.split('\n');
    const head = lines[at]!;
    expect(head.slice(0, packCol)).toBe(`${row.kind.padEnd(22)}  `);
    expect(head.slice(packCol, packCol + row.pack.length)).toBe(row.pack);
    expect(head.slice(packCol + row.pack.length, folderCol).trim()).toBe('');
    expect(folderCol - (packCol + row.pack.length)).toBeGreaterThanOrEqual(2);
    expect(head.slice(folderCol, folderCol + row.folder.length)).toBe(row.folder);
    expect(head.slice(folderCol + row.folder.length, messageCol).trim()).toBe('');
    expect(messageCol - (folderCol + row.folder.length)).toBeGreaterThanOrEqual(2);
    // Never cut: every message line whole, in order, under the message column.
    expect(head.slice(messageCol)).toBe(messageLines[0]);
    for (const [index, line] of messageLines.slice(1).entries()) {
      const shown = lines[at + 1 + index]!;
      expect(shown.slice(0, messageCol).trim()).toBe('');
      expect(shown.slice(messageCol)).toBe(line);
    }
    at += messageLines.length;
  }
  expect(at).toBe(lines.length);
}

describe('pack verify rows (issue 13 item 2)', () => {
  test('a long name, a long folder and a multi-line message: columns apart, nothing cut', () => {
    const rows: VerifyRow[] = [
      {
        kind: 'verified',
        pack: `${'a-pack-with-a-very-long-name-'.repeat(3)}x@10.20.30-rc.1`,
        folder: `${'deeply/nested/folders/'.repeat(6)}pack`,
        message: 'pack.sig verifies with key release-2026',
      },
      {
        kind: 'trust-root-unavailable',
        pack: '-',
        folder: 'p',
        message:
          'The trust root could not be loaded: https://keys.example/jwks.json answered 503.\nThe cached copy is older than PACKWARDEN_PACK_JWKS_MAX_STALE (72h).\nRetry later, or raise the bound.',
      },
      { kind: 'unsigned', pack: '-', folder: 'q', message: 'no pack.sig' },
    ];
    const text = formatVerifyRows(rows);
    expectLaidOut(rows, text);
    expect(text).toContain('Retry later, or raise the bound.\n');
  });

  test('any lengths and any number of message lines (property)', () => {
    fc.assert(
      fc.property(fc.array(rowArb, { minLength: 1, maxLength: 6 }), (rows) => {
        expectLaidOut(rows, formatVerifyRows(rows));
      }),
      { numRuns: 200 },
    );
  });

  test('through the CLI: a signed pack with a 60-character name in a deep folder, and an unsigned one', async () => {
    const work = tempDir();
    const key = join(work, 'release.pem');
    expect((await cli(['pack', 'keygen', '--kid', 'release', '-o', key])).code).toBe(0);
    const name = `${'long-pack-name-'.repeat(4)}end`;
    const deep = join(work, ...Array.from({ length: 8 }, (_, i) => `folder-level-${i}`), name);
    mkdirSync(deep, { recursive: true });
    cpSync(copyOfExample(), deep, { recursive: true });
    const manifest = join(deep, 'agent.yaml');
    writeFileSync(
      manifest,
      readFileSync(manifest, 'utf8').replace('name: hello-pack', `name: ${name}`),
    );
    const signed = await cli(['pack', 'sign', deep, '--key', key, '--kid', 'release']);
    expect(signed.code, signed.stderr).toBe(0);
    const unsigned = copyOfExample();

    const result = await cli(
      ['pack', 'verify', deep, unsigned, '--keys', join(work, 'release.keys.json')],
      { cwd: work, env: { HOME: work } },
    );
    // Unsigned packs among several are reported, not failed (README "pack verify output").
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    const folder = relative(work, deep);
    const head = lines.find((line) => line.startsWith('verified'))!;
    expect(head).toMatch(new RegExp(`^verified {16}${name}@0\\.1\\.0  ${folder}  +\\S`));
    const other = lines.find((line) => line.startsWith('unsigned'))!;
    expect(other).toMatch(/^unsigned {16}- {2,}\S/);
    // Both rows put the folder and the message in the same columns.
    expect(other.indexOf(relative(work, unsigned))).toBe(head.indexOf(folder));
  });
});
