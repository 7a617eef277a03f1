import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type * as ErrorsModule from '../src/errors.js';
import { PackSignatureError, isPackSignatureError } from '../src/index.js';

// The error template every package shares (one brand, one guard; README "Errors").
const BRAND = Symbol.for('packwarden.error');

describe('isPackSignatureError', () => {
  it('recognises its own errors: code, cause, name, a brand that stays out of JSON', () => {
    const cause = new Error('underneath');
    const error = new PackSignatureError('ERR_INVALID_ARGUMENT', 'it failed', { cause });
    expect(isPackSignatureError(error)).toBe(true);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('PackSignatureError');
    expect(error.code).toBe('ERR_INVALID_ARGUMENT');
    expect(error.cause).toBe(cause);
    expect(Object.keys(error)).not.toContain(BRAND);
    expect(JSON.stringify(error)).not.toContain('packwarden.error');
  });

  it("is false for look-alikes and for other packages' errors", () => {
    const lookAlike = Object.assign(new Error('x'), {
      name: 'PackSignatureError',
      code: 'ERR_INVALID_ARGUMENT',
    });
    const otherBrand = Object.defineProperty(new Error('x'), BRAND, { value: 'NotThisError' });
    for (const value of [
      lookAlike,
      otherBrand,
      { name: 'PackSignatureError' },
      new Error('x'),
      null,
      undefined,
      'PackSignatureError',
    ]) {
      expect(isPackSignatureError(value)).toBe(false);
    }
  });

  it('recognises an error from another copy of the package, where instanceof cannot', async () => {
    // A second instance of the module (another query string: vitest loads it again), as when two
    // versions of the package are installed side by side.
    const copyPath = '../src/errors.js?second-copy';
    const copy = (await import(/* @vite-ignore */ copyPath)) as typeof ErrorsModule;
    expect(copy.PackSignatureError).not.toBe(PackSignatureError);
    const foreign = new copy.PackSignatureError('ERR_INVALID_ARGUMENT', 'from the other copy');
    expect(foreign instanceof PackSignatureError).toBe(false);
    expect(isPackSignatureError(foreign)).toBe(true);
    expect(
      copy.isPackSignatureError(new PackSignatureError('ERR_INVALID_ARGUMENT', 'from this copy')),
    ).toBe(true);
  });

  it('recognises a branded error from another realm (vm context: Symbol.for is shared)', () => {
    const foreign: unknown = runInNewContext(
      "Object.defineProperty(new Error('x'), Symbol.for('packwarden.error'), { value: 'PackSignatureError' })",
    );
    expect(foreign instanceof Error).toBe(false);
    expect(isPackSignatureError(foreign)).toBe(true);
  });
});
