import { generateKeyPairSync } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { calculateJwkThumbprint } from 'jose';
import { describe, expect, it } from 'vitest';
import { ecThumbprint } from '../src/thumbprint.js';

const packageDir = join(import.meta.dirname, '..');

describe('ecThumbprint (RFC 7638, no jose at run time)', () => {
  it('agrees with jose calculateJwkThumbprint for generated P-256 keys', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer(), async () => {
        const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
        // Extra members (kid, alg, use) must not change the thumbprint: RFC 7638 takes crv, kty, x, y.
        const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'k', alg: 'ES256', use: 'sig' };
        const { crv, x, y } = jwk as { crv: string; x: string; y: string };
        expect(ecThumbprint({ crv, x, y })).toBe(await calculateJwkThumbprint(jwk, 'sha256'));
      }),
      { numRuns: 50 },
    );
  });

  it('does not declare jose as a runtime dependency, and no source imports it', () => {
    const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    expect(Object.keys(manifest.dependencies ?? {})).not.toContain('jose');
    const sources = readdirSync(join(packageDir, 'src'), { recursive: true, encoding: 'utf8' });
    const importers = sources
      .filter((file) => file.endsWith('.ts'))
      .filter((file) =>
        /from ['"]jose['"]|import\(['"]jose['"]\)/.test(
          readFileSync(join(packageDir, 'src', file), 'utf8'),
        ),
      );
    expect(importers).toEqual([]);
  });
});
