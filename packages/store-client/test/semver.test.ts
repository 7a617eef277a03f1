import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareSemver } from '../src/semver.js';

describe('compareSemver (issue 13.6)', () => {
  it('orders the precedence example of semver.org §11', () => {
    const ordered = [
      '1.0.0-alpha',
      '1.0.0-alpha.1',
      '1.0.0-alpha.beta',
      '1.0.0-beta',
      '1.0.0-beta.2',
      '1.0.0-beta.11',
      '1.0.0-rc.1',
      '1.0.0',
      '2.0.0',
      '2.1.0',
      '2.1.1',
    ];
    for (let i = 0; i < ordered.length; i++) {
      for (let j = 0; j < ordered.length; j++) {
        expect(compareSemver(ordered[i]!, ordered[j]!), `${ordered[i]} vs ${ordered[j]}`).toBe(
          Math.sign(i - j),
        );
      }
    }
  });

  it('tells distinct large versions apart (Number() would call them equal)', () => {
    expect(compareSemver('9007199254740993.0.0', '9007199254740992.0.0')).toBe(1);
    expect(compareSemver('1.0.99999999999999999999', '1.0.99999999999999999998')).toBe(1);
    expect(compareSemver('1.0.0-9007199254740993', '1.0.0-9007199254740992')).toBe(1);
    expect(compareSemver('1.0.0-10', '1.0.0-9')).toBe(1);
    expect(compareSemver('100000000000000000000.0.0', '99999999999999999999.0.0')).toBe(1);
  });

  it('ignores build metadata and treats numeric pre-release identifiers below alphanumeric ones', () => {
    expect(compareSemver('1.0.0+build.1', '1.0.0+build.2')).toBe(0);
    expect(compareSemver('1.0.0-1', '1.0.0-a')).toBe(-1);
    expect(compareSemver('1.0.0-a-b', '1.0.0-a')).toBe(1);
    expect(compareSemver('1.0.0-rc.1+x', '1.0.0')).toBe(-1);
  });

  it('property: agrees with BigInt arithmetic on the core, is antisymmetric and zero only for equal precedence', () => {
    const big = fc.bigInt({ min: 0n, max: 10n ** 30n });
    fc.assert(
      fc.property(fc.tuple(big, big, big), fc.tuple(big, big, big), (x, y) => {
        const a = x.join('.');
        const b = y.join('.');
        let expected = 0;
        for (let i = 0; i < 3 && expected === 0; i++)
          expected = x[i]! === y[i]! ? 0 : x[i]! < y[i]! ? -1 : 1;
        expect(compareSemver(a, b)).toBe(expected);
        expect(compareSemver(b, a)).toBe(-expected);
      }),
      { numRuns: 500, seed: 136 },
    );
  });
});
