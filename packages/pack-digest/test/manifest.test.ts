import { describe, expect, test } from 'vitest';
import {
  compareManifestPaths,
  diffPackManifests,
  digestManifestLines,
  formatManifest,
  isEmptyManifestDiff,
  parseManifestLine,
  parseManifestLines,
  PackDigestError,
  type PackManifestEntry,
} from '@packwarden/pack-digest';

const H = (c: string) => c.repeat(64);

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(PackDigestError);
    return (error as PackDigestError).code;
  }
  return undefined;
}

describe('manifest lines', () => {
  test('round-trip a canonical line', () => {
    const line = `${H('a')} x .claude/hooks/run.sh`;
    expect(parseManifestLine(line)).toEqual({
      sha256: H('a'),
      mode: 'x',
      path: '.claude/hooks/run.sh',
    });
  });

  test.each([
    ['uppercase hex', `${H('A')} f a`],
    ['short hash', `${'a'.repeat(63)} f a`],
    ['unknown mode', `${H('a')} d a`],
    ['two spaces', `${H('a')}  f a`],
    ['empty path', `${H('a')} f `],
    ['leading ./', `${H('a')} f ./a`],
    ['absolute', `${H('a')} f /etc/passwd`],
    ['dot-dot', `${H('a')} f a/../b`],
    ['empty segment', `${H('a')} f a//b`],
    ['trailing slash', `${H('a')} f a/`],
    ['control character', `${H('a')} f a\u0007b`],
    ['newline', `${H('a')} f a\nb`],
    ['NFD path', `${H('a')} f cafe\u0301`],
    ['the root pack.sig', `${H('a')} f pack.sig`],
    ['lone surrogate', `${H('a')} f a\ud800`],
  ])('refuses %s', (_label, line) => {
    expect(codeOf(() => parseManifestLine(line))).toBe('ERR_DIGEST_MANIFEST_LINE');
  });

  test('lines must be strictly sorted by UTF-8 bytes, without repeats', () => {
    const sorted = [`${H('1')} f ｆ`, `${H('2')} f 😀`];
    expect(parseManifestLines(sorted)).toHaveLength(2);
    // UTF-16 order would put the emoji first: refused.
    expect(codeOf(() => parseManifestLines([...sorted].reverse()))).toBe(
      'ERR_DIGEST_MANIFEST_ORDER',
    );
    expect(codeOf(() => parseManifestLines([sorted[0]!, sorted[0]!]))).toBe(
      'ERR_DIGEST_MANIFEST_ORDER',
    );
    expect(compareManifestPaths('ｆ', '😀')).toBeLessThan(0);
    expect('ｆ' < '😀').toBe(false); // the trap the byte order avoids
  });

  test('digestManifestLines hashes exactly the formatted manifest', () => {
    const entries: PackManifestEntry[] = [
      { sha256: H('b'), mode: 'f', path: 'a' },
      { sha256: H('c'), mode: 'l', path: 'b' },
    ];
    expect(formatManifest(entries)).toBe(`packwarden-digest/1\n${H('b')} f a\n${H('c')} l b\n`);
    expect(digestManifestLines(entries.map((e) => `${e.sha256} ${e.mode} ${e.path}`))).toMatch(
      /^[0-9a-f]{64}$/,
    );
    expect(digestManifestLines([])).toBe(
      '53414350e4abf26592011631056c51313680d5046c70b3c047ce74adc3cc8514',
    );
  });
});

describe('diffPackManifests', () => {
  const before: PackManifestEntry[] = [
    { path: 'AGENTS.md', mode: 'f', sha256: H('1') },
    { path: 'hooks/run.sh', mode: 'f', sha256: H('2') },
    { path: 'link', mode: 'l', sha256: H('3') },
    { path: 'old.md', mode: 'f', sha256: H('4') },
    { path: 'same.md', mode: 'f', sha256: H('5') },
  ];
  test('added, removed, modified and mode-changed files', () => {
    const after: PackManifestEntry[] = [
      { path: 'AGENTS.md', mode: 'f', sha256: H('9') },
      { path: 'hooks/run.sh', mode: 'x', sha256: H('2') },
      { path: 'link', mode: 'f', sha256: H('3') },
      { path: 'new.md', mode: 'f', sha256: H('6') },
      { path: 'same.md', mode: 'f', sha256: H('5') },
    ];
    expect(diffPackManifests(before, after)).toEqual({
      added: ['new.md'],
      removed: ['old.md'],
      modified: ['AGENTS.md', 'link'],
      modeChanged: ['hooks/run.sh'],
    });
  });
  test('an identical manifest gives an empty diff', () => {
    const diff = diffPackManifests(before, [...before]);
    expect(isEmptyManifestDiff(diff)).toBe(true);
    expect(isEmptyManifestDiff(diffPackManifests(before, before.slice(1)))).toBe(false);
  });
});
