import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type * as ErrorsModule from '../src/errors.js';
import {
  StoreError,
  buildStaticStore,
  installPack,
  isStoreError,
  openStore,
} from '../src/index.js';
import { tempDir, writePack } from './helpers.js';

// The error template every package shares (one brand, one guard; README "Errors").
const BRAND = Symbol.for('packwarden.error');

describe('isStoreError', () => {
  it('recognises its own errors: code, cause, name, a brand that stays out of JSON', () => {
    const cause = new Error('underneath');
    const error = new StoreError('ERR_ABORTED', 'it failed', { cause });
    expect(isStoreError(error)).toBe(true);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('StoreError');
    expect(error.code).toBe('ERR_ABORTED');
    expect(error.cause).toBe(cause);
    expect(Object.keys(error)).not.toContain(BRAND);
    expect(JSON.stringify(error)).not.toContain('packwarden.error');
  });

  it("is false for look-alikes and for other packages' errors", () => {
    const lookAlike = Object.assign(new Error('x'), { name: 'StoreError', code: 'ERR_ABORTED' });
    const otherBrand = Object.defineProperty(new Error('x'), BRAND, { value: 'NotThisError' });
    for (const value of [
      lookAlike,
      otherBrand,
      { name: 'StoreError' },
      new Error('x'),
      null,
      undefined,
      'StoreError',
    ]) {
      expect(isStoreError(value)).toBe(false);
    }
  });

  it('recognises an error from another copy of the package, where instanceof cannot', async () => {
    // A second instance of the module (another query string: vitest loads it again), as when two
    // versions of the package are installed side by side.
    const copyPath = '../src/errors.js?second-copy';
    const copy = (await import(/* @vite-ignore */ copyPath)) as typeof ErrorsModule;
    expect(copy.StoreError).not.toBe(StoreError);
    const foreign = new copy.StoreError('ERR_ABORTED', 'from the other copy');
    expect(foreign instanceof StoreError).toBe(false);
    expect(isStoreError(foreign)).toBe(true);
    expect(copy.isStoreError(new StoreError('ERR_ABORTED', 'from this copy'))).toBe(true);
  });

  it('recognises a branded error from another realm (vm context: Symbol.for is shared)', () => {
    const foreign: unknown = runInNewContext(
      "Object.defineProperty(new Error('x'), Symbol.for('packwarden.error'), { value: 'StoreError' })",
    );
    expect(foreign instanceof Error).toBe(false);
    expect(isStoreError(foreign)).toBe(true);
  });
});

describe('one code, one meaning', () => {
  it('a pack.sig that differs from the index is ERR_PACK_SIGNATURE_MISMATCH; a digest stays ERR_PACK_DIGEST_MISMATCH', async () => {
    const root = await tempDir();
    await writePack(join(root, 'packs', 'demo', '1.0.0'), 'demo', '1.0.0', { 'skills/a.md': 'a' });
    const out = join(root, 'store');
    await buildStaticStore(join(root, 'packs'), { out });
    const index = JSON.parse(await readFile(join(out, 'index.json'), 'utf8'));
    const version = index.artifacts[0].versions[0];
    for (const [patch, code] of [
      // The archive has no pack.sig; the index says it has one.
      [{ signature: 'eyJhbGciOiJFUzI1NiJ9.e30.c2ln' }, 'ERR_PACK_SIGNATURE_MISMATCH'],
      [{ digest: 'b'.repeat(64) }, 'ERR_PACK_DIGEST_MISMATCH'],
    ] as const) {
      index.artifacts[0].versions[0] = { ...version, ...patch };
      await writeFile(join(out, 'index.json'), JSON.stringify(index));
      const store = await openStore({ url: out, env: {}, cacheDir: false });
      const home = join(root, `home-${code}`);
      const error = await installPack(store, { type: 'pack', slug: 'demo' }, { home }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isStoreError(error) && error.code).toBe(code);
      await expect(readFile(join(home, 'agents', 'demo', 'current.txt'))).rejects.toThrow();
    }
  });
});
