import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { cleanTemps, examplePack, repoRoot, tempDir } from './helpers.js';
import { baseEnv, bin, until } from './fixtures/sandbox.js';

afterEach(cleanTemps);

/** The Python driver exactly as a document shows it. */
function documentedDriver(file: string): string {
  const doc = readFileSync(join(repoRoot, file), 'utf8');
  const block =
    /<!-- python-driver:start -->\s*```python\n([\s\S]*?)```\s*<!-- python-driver:end -->/.exec(
      doc,
    );
  if (block?.[1] === undefined) throw new Error(`${file} lost its python driver block`);
  return block[1];
}

test('the README shows the same Python driver as docs/sandbox.md', () => {
  expect(documentedDriver('README.md')).toBe(documentedDriver('docs/sandbox.md'));
});

test('the Python driver of docs/sandbox.md runs a turn against a real packwarden sandbox --socket', async () => {
  const state = realpathSync(tempDir());
  const driver = join(state, 'driver.py');
  writeFileSync(driver, documentedDriver('docs/sandbox.md'));
  const socket = join(state, 'packwarden.sock');
  const sandbox = spawn(
    process.execPath,
    [bin, 'sandbox', '--agent', examplePack, '--socket', socket, '--state-dir', state],
    { env: baseEnv(), stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  sandbox.stderr.setEncoding('utf8');
  sandbox.stderr.on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) =>
    sandbox.once('exit', (code) => resolve(code)),
  );
  try {
    await until(() => stderr.includes('listening on'), 10_000, 'the socket');
    const token = 'python-driver-token-987654';
    const result = spawnSync('python3', [driver, socket, 'hello from Python'], {
      encoding: 'utf8',
      timeout: 20_000,
      env: { ...baseEnv(), PACKWARDEN_MODEL_TOKEN: token, PACKWARDEN_BASE_URL: 'http://gw/v1' },
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('Hello! You said: "hello from Python".');
    expect(result.stdout).toContain('[tool] list_workspace {"path": "."}');
    expect(result.stdout).toContain('[tool done] write_file -> "wrote hello.txt"');
    expect(result.stdout.trimEnd().endsWith('[end_turn]')).toBe(true);
    expect(readFileSync(join(state, 'workspace', 'hello.txt'), 'utf8')).toContain(
      'hello from Python',
    );
    expect(stderr).not.toContain(token);
  } finally {
    sandbox.kill('SIGTERM');
    expect(await exited).toBe(0);
  }
});
