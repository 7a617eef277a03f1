/**
 * What importing the package costs a consumer (issue 14): Node 20 loads an ES module graph one
 * module at a time, so every module is paid for at start-up. jose's root entry is 46 modules
 * (JWE, JWT, remote JWK sets); this package needs compact JWS signing and verification and the
 * JWK thumbprint, which jose exports as subpaths. Importing them instead took the import of
 * this package from 102.6 to 88.5 ms (median of 15 fresh processes).
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { modulesLoadedBy } from '../../../scripts/modules-loaded.js';
import { cleanupTemps, makeTemp } from './helpers.js';

afterAll(cleanupTemps);

// Built by test/global-setup.ts unless newer than every source.
const entry = fileURLToPath(new URL('../dist/index.js', import.meta.url));

/** jose's modules among `urls`, as paths inside its dist/webapi folder. */
const joseModules = (urls: string[]): string[] =>
  urls.flatMap((url) => {
    const match = /\/jose\/dist\/webapi\/(.+)$/.exec(url);
    return match ? [match[1]!] : [];
  });

describe('importing @packwarden/pack-signature', () => {
  it("loads jose's compact JWS and thumbprint modules, not its root entry", async () => {
    const { urls } = modulesLoadedBy(
      await makeTemp('imports-'),
      `const m = await import(${JSON.stringify(pathToFileURL(entry).href)});
if (typeof m.verifyPack !== 'function' || typeof m.signPack !== 'function') process.exit(3);`,
    );
    const jose = joseModules(urls);
    // What the package uses is there: the hook sees jose's modules.
    expect(jose).toEqual(
      expect.arrayContaining(['jws/compact/verify.js', 'jws/compact/sign.js', 'jwk/thumbprint.js']),
    );
    // What it does not use is not.
    expect(jose).not.toContain('index.js');
    expect(jose.filter((path) => /^(jwe|jwt|jwks)\//.test(path))).toEqual([]);
  });
});
