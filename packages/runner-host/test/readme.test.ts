import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { hostScript, packageDir, tempDir } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

it('the README’s dependency-free driver runs a turn against the host', async () => {
  const readme = await readFile(join(packageDir, 'README.md'), 'utf8');
  const block = /<!-- driver:start -->\s*```js\n([\s\S]*?)```\s*<!-- driver:end -->/.exec(
    readme,
  )?.[1];
  expect(block).toBeDefined();
  expect(block?.trim().split('\n').length).toBeLessThanOrEqual(36);
  const dir = await tempDir();
  cleanups.push(dir.cleanup);
  const driver = join(dir.path, 'driver.mjs');
  await writeFile(driver, block ?? '');
  const child = spawn(process.execPath, [
    driver,
    'hello from the README',
    process.execPath,
    hostScript,
    '--stdio',
  ]);
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const code = await new Promise((resolve) => child.on('close', resolve));
  expect(stdout).toBe('hello from the README\n[end_turn]\n');
  expect(code).toBe(0);
});
