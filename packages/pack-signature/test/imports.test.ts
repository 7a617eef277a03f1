/**
 * What importing the package costs a consumer (issue 14): Node 20 loads an ES module graph one
 * module at a time, so every module is paid for at start-up. jose's root entry is 46 modules
 * (JWE, JWT, remote JWK sets); this package needs compact JWS signing and verification and the
 * JWK thumbprint, which jose exports as subpaths. Importing them instead took the import of
 * this package from 102.6 to 88.5 ms (median of 15 fresh processes).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupTemps, makeTemp } from './helpers.js';

afterAll(cleanupTemps);

// Built by test/global-setup.ts unless newer than every source.
const entry = fileURLToPath(new URL('../dist/index.js', import.meta.url));

/** The URLs of every module a fresh Node process loads to run `script` (an ES module). */
async function modulesLoadedBy(script: string): Promise<string[]> {
  const dir = await makeTemp('imports-');
  const log = join(dir, 'loaded.txt');
  writeFileSync(log, '');
  writeFileSync(
    join(dir, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(${JSON.stringify(log)}, result.url + '\\n');
  return result;
}
`,
  );
  writeFileSync(
    join(dir, 'register.mjs'),
    "import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n",
  );
  const child = spawnSync(
    process.execPath,
    [
      '--import',
      pathToFileURL(join(dir, 'register.mjs')).href,
      '--input-type=module',
      '-e',
      script,
    ],
    { encoding: 'utf8', timeout: 30_000 },
  );
  expect(child.status, child.stderr).toBe(0);
  return [...new Set(readFileSync(log, 'utf8').split('\n').filter(Boolean))];
}

/** jose's modules among `urls`, as paths inside its dist/webapi folder. */
const joseModules = (urls: string[]): string[] =>
  urls.flatMap((url) => {
    const match = /\/jose\/dist\/webapi\/(.+)$/.exec(url);
    return match ? [match[1]!] : [];
  });

describe('importing @packwarden/pack-signature', () => {
  it("loads jose's compact JWS and thumbprint modules, not its root entry", async () => {
    const urls = await modulesLoadedBy(
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
