import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, test } from 'vitest';
import { buildIfStale } from '../../../scripts/build-if-stale.js';

// takeOverStdio owns its process's stdout and stderr: each case runs in a child process of its
// own, against the built package (as the sandbox runs it).
const packageRoot = fileURLToPath(new URL('..', import.meta.url));
const dist = new URL('../dist/index.js', import.meta.url).href;
const runnerHost = new URL('../../runner-host/dist/index.js', import.meta.url).href;

beforeAll(() => {
  buildIfStale(packageRoot, { output: 'dist/index.js' });
}, 120_000);

const TOKEN = 'sk-live-0123456789-SPLIT-SECRET';

function child(body: string): Promise<{ stdout: string; stderr: string; code: number | null }> {
  const source = `
    const { takeOverStdio } = await import(${JSON.stringify(dist)});
    const { SecretSet } = await import(${JSON.stringify(runnerHost)});
    const secrets = new SecretSet();
    secrets.add(${JSON.stringify(TOKEN)});
    ${body}
  `;
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, ['--input-type=module', '-e', source], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    proc.on('close', (code) => resolve({ stdout, stderr, code }));
  });
}

describe('takeOverStdio (docs/sandbox.md, "Engine output never reaches the protocol channel")', () => {
  test('a token written to stderr in two pieces, across turns of the event loop, never appears whole', async () => {
    const half = Math.floor(TOKEN.length / 2);
    const result = await child(`
      takeOverStdio(secrets, { idleFlushMs: 60000 });
      process.stderr.write('key=' + ${JSON.stringify(TOKEN.slice(0, half))});
      await new Promise((resolve) => setImmediate(resolve));
      process.stderr.write(Buffer.from(${JSON.stringify(TOKEN.slice(half))} + ';'));
      await new Promise((resolve) => setImmediate(resolve));
      process.stdout.write('also ' + ${JSON.stringify(TOKEN.slice(0, 5))});
      process.stderr.write(${JSON.stringify(TOKEN.slice(5))} + ' end');
    `);
    expect(result.code).toBe(0);
    expect(result.stderr).not.toContain(TOKEN);
    expect(result.stderr).toBe('key=[redacted];also [redacted] end');
    // stdout is the protocol's alone: what was written to process.stdout went to stderr.
    expect(result.stdout).toBe('');
  });

  test('text held as a possible secret prefix is released after the idle delay (injected timer) and at exit', async () => {
    const result = await child(`
      const pending = [];
      takeOverStdio(secrets, {
        timers: { setTimeout: (fn) => (pending.push(fn), pending.length), clearTimeout: () => {} },
      });
      process.stderr.write('before sk-live');
      const held = pending.length;
      pending.at(-1)();
      process.stderr.write(' | tail sk-li');
      process.stdout.write = undefined; // nothing else runs; exit releases the rest
      process.exitCode = held === 1 ? 0 : 3;
    `);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('before sk-live | tail sk-li');
  });
});
