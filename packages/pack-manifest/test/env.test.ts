import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { isAbsolute, join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, test } from 'vitest';
import {
  kidProblem,
  lookupPackwardenEnv,
  PackManifestError,
  packwardenHome,
  readPackwardenFlag,
} from '@packwarden/pack-manifest/resolve';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function thrown(fn: () => unknown): PackManifestError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(PackManifestError);
    return error as PackManifestError;
  }
  throw new Error('expected a PackManifestError');
}

describe('readPackwardenFlag: a security flag never reads a typo as "off" (issue 9, W8)', () => {
  test('the accepted values, in any case and with blanks around them', () => {
    for (const on of ['1', 'true', 'TRUE', 'Yes', 'on', ' 1 ', 'ON\n']) {
      expect(
        readPackwardenFlag({ PACKWARDEN_REQUIRE_SIGNED_PACK: on }, 'REQUIRE_SIGNED_PACK'),
      ).toBe(true);
    }
    for (const off of ['0', 'false', 'No', 'OFF', '', '   ', undefined]) {
      expect(
        readPackwardenFlag({ PACKWARDEN_REQUIRE_SIGNED_PACK: off }, 'REQUIRE_SIGNED_PACK'),
      ).toBe(false);
    }
  });

  test.each(['required', 'y', 'enabled', 'n', '2', 'truee', 'on;', 'yes please'])(
    '%j is ERR_ENV_FLAG_INVALID, naming the variable and the accepted values',
    (value) => {
      const error = thrown(() =>
        readPackwardenFlag({ PACKWARDEN_REQUIRE_SIGNED_PACK: value }, 'REQUIRE_SIGNED_PACK'),
      );
      expect(error.code).toBe('ERR_ENV_FLAG_INVALID');
      expect(error.message).toContain('PACKWARDEN_REQUIRE_SIGNED_PACK=');
      expect(error.message).toMatch(/1, true, yes, on .*0, false, no, off/);
    },
  );

  test('the alias is named when it is the one read, and packwarden’s own name wins', () => {
    const error = thrown(() => readPackwardenFlag({ AGENTHIPPO_X: 'enabled' }, 'X'));
    expect(error.message).toContain('AGENTHIPPO_X=');
    expect(readPackwardenFlag({ PACKWARDEN_X: 'yes', AGENTHIPPO_X: 'enabled' }, 'X')).toBe(true);
    expect(() => readPackwardenFlag({ PACKWARDEN_X: 'enabled', AGENTHIPPO_X: '1' }, 'X')).toThrow(
      PackManifestError,
    );
  });

  test('a control character in the value is not echoed raw', () => {
    const error = thrown(() => readPackwardenFlag({ PACKWARDEN_X: 'y\u001b]52;c;x\u0007' }, 'X'));
    // eslint-disable-next-line no-control-regex
    expect(error.message).not.toMatch(/[\u0000-\u001f]/);
  });

  test('any value: true, false, or ERR_ENV_FLAG_INVALID (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), (value) => {
        try {
          expect(typeof readPackwardenFlag({ PACKWARDEN_X: value }, 'X')).toBe('boolean');
        } catch (error) {
          expect((error as PackManifestError).code).toBe('ERR_ENV_FLAG_INVALID');
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('lookupPackwardenEnv: one reading of the environment (issue 13.6)', () => {
  test('trimmed, blank is unset, the alias as fallback, a warning when they differ', () => {
    expect(lookupPackwardenEnv({ PACKWARDEN_X: ' a ' }, 'X')).toEqual({
      value: 'a',
      variable: 'PACKWARDEN_X',
    });
    expect(lookupPackwardenEnv({ PACKWARDEN_X: '  ', AGENTHIPPO_X: 'b' }, 'X')).toEqual({
      value: 'b',
      variable: 'AGENTHIPPO_X',
    });
    const warnings: string[] = [];
    expect(
      lookupPackwardenEnv({ PACKWARDEN_X: 'a', AGENTHIPPO_X: 'b' }, 'X', warnings)?.value,
    ).toBe('a');
    expect(warnings).toEqual(['AGENTHIPPO_X is ignored because PACKWARDEN_X is set.']);
    expect(lookupPackwardenEnv({}, 'X')).toBeUndefined();
  });
});

describe('packwardenHome never uses an empty or relative home (issue 13.6)', () => {
  const account = userInfo().homedir;

  test('an empty, blank or relative HOME falls back to the account home from the user database', () => {
    for (const HOME of ['', '   ', 'relative', './x', '..', undefined]) {
      const home = packwardenHome({ HOME });
      expect(isAbsolute(home)).toBe(true);
      expect(home).toBe(join(account, '.packwarden'));
    }
    expect(packwardenHome({ HOME: '/home/u' })).toBe('/home/u/.packwarden');
  });

  test('a relative PACKWARDEN_HOME is ERR_ENV_HOME_INVALID; an absolute one is normalised', () => {
    for (const value of ['state', './state', '../x', '~/x']) {
      expect(thrown(() => packwardenHome({ PACKWARDEN_HOME: value })).code).toBe(
        'ERR_ENV_HOME_INVALID',
      );
    }
    expect(thrown(() => packwardenHome({ AGENTHIPPO_HOME: 'x' })).message).toContain(
      'AGENTHIPPO_HOME',
    );
    expect(packwardenHome({ PACKWARDEN_HOME: '/srv/pw/../pw/' })).toBe('/srv/pw/');
  });

  test('HOME="" in a real process: nothing is placed under the current folder', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'pw-home-'));
    dirs.push(cwd);
    const child = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { packwardenHome } = await import(${JSON.stringify(new URL('../dist/resolve-entry.js', import.meta.url).href)});
         process.stdout.write(packwardenHome());`,
      ],
      { cwd, env: { PATH: process.env['PATH'], HOME: '' }, encoding: 'utf8' },
    );
    expect(child.status).toBe(0);
    expect(isAbsolute(child.stdout)).toBe(true);
    expect(child.stdout.startsWith(cwd)).toBe(false);
    expect(readdirSync(cwd)).toEqual([]);
  });
});

describe('kidProblem: the one kid rule (issue 13.6)', () => {
  test.each([
    ['a bidi override', 'release\u202egpj.exe'],
    ['a zero-width joiner', 'rel\u200dease'],
    ['an escape sequence', 'release\u001b[2J'],
    ['a newline', 'release\nfake'],
    ['a C1 control', 'release\u0085'],
    ['a path separator', 'keys/release'],
    ['".."', 'a..b'],
    ['a space', 'my key'],
    ['nothing', ''],
    ['257 characters', 'k'.repeat(257)],
  ])('refuses %s', (_name, kid) => {
    expect(kidProblem(kid)).toBeTypeOf('string');
  });

  test('accepts ordinary kids', () => {
    for (const kid of [
      'store-release-2026-08',
      'S9FC_5c2n3eZEAD1bQ_46jn24OADyXq0kITicUEUpgs',
      'a.b',
      'k'.repeat(256),
    ]) {
      expect(kidProblem(kid)).toBeUndefined();
    }
  });

  test('judges kids with non-ASCII characters by the Unicode classes (issue 14 kept them lazy)', () => {
    for (const kid of ['clé-2026', 'ключ', '鍵-1', 'k😀']) expect(kidProblem(kid)).toBeUndefined();
    for (const kid of ['a\u00a0b', 'a\u3000b', 'a\u2028b', 'a\ufeffb', 'a\ud800b', 'a\u{e0001}']) {
      expect(kidProblem(kid)).toBe('kid contains a control, format or whitespace character');
    }
  });

  test('accepts a kid exactly when the one rule does (property)', () => {
    const rule = (kid: string) =>
      kid.length > 0 &&
      kid.length <= 256 &&
      !/[/\\]/.test(kid) &&
      !kid.includes('..') &&
      !/[\p{Cc}\p{Cf}\p{Cs}\p{Z}\s]/u.test(kid);
    const characters = [
      ...Array.from({ length: 128 }, (_, code) => String.fromCharCode(code)),
      ...['\u0085', '\u00a0', '\u00ad', '\u00e9', '\u200b', '\u2028', '\u202e', '\u3000'],
      ...['\ufeff', '\ud800', '\udc00', '\ud83d\ude00', '\u{e0001}'],
    ];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...characters), { maxLength: 12 }), (parts) => {
        const kid = parts.join('');
        expect(kidProblem(kid) === undefined).toBe(rule(kid));
      }),
      { numRuns: 3000 },
    );
  });

  test('no accepted kid holds a control, format, separator or space character (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (kid) => {
        if (kidProblem(kid) === undefined) {
          expect(kid).not.toMatch(/[\p{Cc}\p{Cf}\p{Cs}\p{Z}\s/\\]/u);
        }
      }),
      { numRuns: 500 },
    );
  });
});
