import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Runs `script` (an ES module's text) in a fresh Node process whose module hooks log the URL of
 * every module it resolves, the way a consumer's process loads a package (issue 14: what an
 * import loads is what a consumer pays for). `dir` is an empty temporary folder for the hooks and
 * the log. Throws with the child's stderr unless it exits 0; returns each URL once, in the order
 * first resolved, and what the script wrote to stdout.
 */
export function modulesLoadedBy(dir: string, script: string): { urls: string[]; stdout: string } {
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
  if (child.status !== 0) {
    throw new Error(
      `node exited ${child.status ?? child.signal}: ${child.stderr || child.error?.message}`,
    );
  }
  const urls = [...new Set(readFileSync(log, 'utf8').split('\n').filter(Boolean))];
  return { urls, stdout: child.stdout };
}
