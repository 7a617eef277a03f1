import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type * as ErrorsModule from '../src/errors.js';
import { SandboxError, isSandboxError } from '../src/index.js';

// The error template every package shares (one brand, one guard; README "Errors").
const BRAND = Symbol.for('packwarden.error');

describe('isSandboxError', () => {
  it('recognises its own errors: code, cause, name, a brand that stays out of JSON', () => {
    const cause = new Error('underneath');
    const error = new SandboxError('ERR_INVALID_OPTIONS', 'it failed', { cause });
    expect(isSandboxError(error)).toBe(true);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('SandboxError');
    expect(error.code).toBe('ERR_INVALID_OPTIONS');
    expect(error.cause).toBe(cause);
    expect(Object.keys(error)).not.toContain(BRAND);
    expect(JSON.stringify(error)).not.toContain('packwarden.error');
  });

  it("is false for look-alikes and for other packages' errors", () => {
    const lookAlike = Object.assign(new Error('x'), {
      name: 'SandboxError',
      code: 'ERR_INVALID_OPTIONS',
    });
    const otherBrand = Object.defineProperty(new Error('x'), BRAND, { value: 'NotThisError' });
    for (const value of [
      lookAlike,
      otherBrand,
      { name: 'SandboxError' },
      new Error('x'),
      null,
      undefined,
      'SandboxError',
    ]) {
      expect(isSandboxError(value)).toBe(false);
    }
  });

  it('recognises an error from another copy of the package, where instanceof cannot', async () => {
    // A second instance of the module (another query string: vitest loads it again), as when two
    // versions of the package are installed side by side.
    const copyPath = '../src/errors.js?second-copy';
    const copy = (await import(/* @vite-ignore */ copyPath)) as typeof ErrorsModule;
    expect(copy.SandboxError).not.toBe(SandboxError);
    const foreign = new copy.SandboxError('ERR_INVALID_OPTIONS', 'from the other copy');
    expect(foreign instanceof SandboxError).toBe(false);
    expect(isSandboxError(foreign)).toBe(true);
    expect(copy.isSandboxError(new SandboxError('ERR_INVALID_OPTIONS', 'from this copy'))).toBe(
      true,
    );
  });

  it('recognises a branded error from another realm (vm context: Symbol.for is shared)', () => {
    const foreign: unknown = runInNewContext(
      "Object.defineProperty(new Error('x'), Symbol.for('packwarden.error'), { value: 'SandboxError' })",
    );
    expect(foreign instanceof Error).toBe(false);
    expect(isSandboxError(foreign)).toBe(true);
  });
});
