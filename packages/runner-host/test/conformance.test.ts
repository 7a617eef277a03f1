import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conformanceCases, runConformance } from '../src/conformance/index.js';
import { conformanceCli, startSocketHost, stdioHostCommand, type SocketHost } from './helpers.js';

const SECRET_FRAGMENTS = ['sk-live-', 'SESSION-KEY', 'SECRET-VALUE'];

function runCli(args: string[]): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [conformanceCli, ...args]);
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stdout }));
  });
}

describe('conformance kit against the package host', () => {
  it('passes every case over stdio (a fresh host process per case)', async () => {
    const report = await runConformance({ stdio: stdioHostCommand() });
    const failures = report.results.filter((r) => !r.ok);
    expect(failures).toEqual([]);
    expect(report.results).toHaveLength(conformanceCases.length);
    expect(report.ok).toBe(true);
    // A fresh process per case: on a loaded machine this takes well over the default 30 s.
  }, 120_000);

  describe('over a unix socket', () => {
    let host: SocketHost;
    beforeAll(async () => {
      host = await startSocketHost();
    });
    afterAll(() => host.stop());

    it('passes every case; the last one kills the host, and its stderr never held a secret', async () => {
      const report = await runConformance({ socket: host.path });
      expect(report.results.filter((r) => !r.ok)).toEqual([]);
      expect(report.results.map((r) => r.name).at(-1)).toBe('host killed mid-run');
      const stderr = host.stderr();
      expect(stderr).toContain('[redacted]');
      for (const fragment of SECRET_FRAGMENTS) expect(stderr).not.toContain(fragment);
    });
  });

  it('catches a host that buffers a slow driver’s output instead of pushing back', async () => {
    const huge = String(1024 * 1024 * 1024);
    const report = await runConformance(
      { stdio: stdioHostCommand(`env RUNNER_HOST_HIGH_WATER_BYTES=${huge} `) },
      { only: ['100 MB'] },
    );
    expect(report.ok).toBe(false);
    expect(report.results[0]?.detail).toMatch(/retained .* more heap/);
  });

  it('CLI prints one line per case and exits 0 when they pass', async () => {
    const { code, stdout } = await runCli([
      '--stdio',
      stdioHostCommand(),
      '--only',
      'CRLF',
      '--only',
      'handshake',
    ]);
    const lines = stdout.trim().split('\n');
    expect(lines.filter((l) => l.startsWith('ok   '))).toHaveLength(3);
    expect(lines.at(-1)).toBe('3 passed, 0 failed');
    expect(code).toBe(0);
  });

  it('CLI exits 1 and prints FAIL against a host that never answers', async () => {
    const silent = `${JSON.stringify(process.execPath)} -e "process.stdin.resume()"`;
    const { code, stdout } = await runCli([
      '--stdio',
      silent,
      '--only',
      'CRLF',
      '--timeout-ms',
      '300',
    ]);
    expect(stdout).toMatch(/^FAIL CRLF line endings .*timed out/m);
    expect(code).toBe(1);
  });

  it('CLI --list prints every case name and runs nothing; with --json, a versioned list', async () => {
    const names = conformanceCases.map((c) => c.name);
    const listed = await runCli(['--list']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toBe(`${names.join('\n')}\n`);
    const json = await runCli(['--list', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ version: 1, cases: names });
  });

  it('CLI refuses an --only that matches no case, and a timeout that is not a whole number (exit 2)', async () => {
    // Without the refusal a typo ran nothing and printed "0 passed, 0 failed", exit 0.
    const typo = await runCli([
      '--stdio',
      stdioHostCommand(),
      '--only',
      'CRLF',
      '--only',
      'handshak3',
    ]);
    expect(typo.code).toBe(2);
    expect(typo.stdout).toMatch(
      /^no case matches --only "handshak3"; --list prints the case names$/m,
    );
    expect(typo.stdout).not.toMatch(/passed/);
    for (const bad of ['abc', '0', '-5', '1.5', '10s']) {
      const run = await runCli([
        '--stdio',
        stdioHostCommand(),
        '--only',
        'CRLF',
        '--timeout-ms',
        bad,
      ]);
      expect(run.code).toBe(2);
      // parseArgs itself refuses "-5" (it reads like an option); the others reach our check.
      if (!bad.startsWith('-')) {
        expect(run.stdout).toMatch(/^--timeout-ms takes a whole number of milliseconds/m);
      }
    }
    const cancel = await runCli(['--stdio', stdioHostCommand(), '--cancel-timeout-ms', 'NaN']);
    expect(cancel.code).toBe(2);
  });

  it('CLI exits 2 on usage errors and --json prints a versioned report', async () => {
    expect((await runCli([])).code).toBe(2);
    // A socket path the kernel would cut: one usage error, before any case runs.
    const long = await runCli(['--socket', `/tmp/${'s'.repeat(120)}.sock`]);
    expect(long.code).toBe(2);
    expect(long.stdout).toMatch(
      /^--socket \/tmp\/s+\.sock is 130 bytes long, over the 10[37] bytes/m,
    );
    expect(long.stdout).not.toMatch(/^(ok|FAIL) /m);
    const { code, stdout } = await runCli([
      '--stdio',
      stdioHostCommand(),
      '--only',
      'CRLF',
      '--json',
    ]);
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as { version: number; ok: boolean; results: unknown[] };
    expect(report).toMatchObject({ version: 1, ok: true });
    expect(report.results).toHaveLength(1);
  });
});
