import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type * as ErrorsModule from '../src/errors.js';
import { PackManifestError, isPackManifestError } from '../src/resolve-entry.js';

// The error template every package shares (one brand, one guard; README "Errors").
const BRAND = Symbol.for('packwarden.error');

describe('isPackManifestError', () => {
  it('recognises its own errors: code, cause, name, a brand that stays out of JSON', () => {
    const cause = new Error('underneath');
    const error = new PackManifestError('ERR_MANIFEST_NOT_FOUND', 'it failed', { cause });
    expect(isPackManifestError(error)).toBe(true);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('PackManifestError');
    expect(error.code).toBe('ERR_MANIFEST_NOT_FOUND');
    expect(error.cause).toBe(cause);
    expect(Object.keys(error)).not.toContain(BRAND);
    expect(JSON.stringify(error)).not.toContain('packwarden.error');
  });

  it("is false for look-alikes and for other packages' errors", () => {
    const lookAlike = Object.assign(new Error('x'), {
      name: 'PackManifestError',
      code: 'ERR_MANIFEST_NOT_FOUND',
    });
    const otherBrand = Object.defineProperty(new Error('x'), BRAND, { value: 'NotThisError' });
    for (const value of [
      lookAlike,
      otherBrand,
      { name: 'PackManifestError' },
      new Error('x'),
      null,
      undefined,
      'PackManifestError',
    ]) {
      expect(isPackManifestError(value)).toBe(false);
    }
  });

  it('recognises an error from another copy of the package, where instanceof cannot', async () => {
    // A second instance of the module (another query string: vitest loads it again), as when two
    // versions of the package are installed side by side.
    const copyPath = '../src/errors.js?second-copy';
    const copy = (await import(/* @vite-ignore */ copyPath)) as typeof ErrorsModule;
    expect(copy.PackManifestError).not.toBe(PackManifestError);
    const foreign = new copy.PackManifestError('ERR_MANIFEST_NOT_FOUND', 'from the other copy');
    expect(foreign instanceof PackManifestError).toBe(false);
    expect(isPackManifestError(foreign)).toBe(true);
    expect(
      copy.isPackManifestError(new PackManifestError('ERR_MANIFEST_NOT_FOUND', 'from this copy')),
    ).toBe(true);
  });

  it('recognises a branded error from another realm (vm context: Symbol.for is shared)', () => {
    const foreign: unknown = runInNewContext(
      "Object.defineProperty(new Error('x'), Symbol.for('packwarden.error'), { value: 'PackManifestError' })",
    );
    expect(foreign instanceof Error).toBe(false);
    expect(isPackManifestError(foreign)).toBe(true);
  });
});
