import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parsePackManifest } from '@packwarden/pack-manifest';
import { afterEach, describe, expect, test } from 'vitest';
import { loadPackEngine } from '../src/index.js';
import { alive, cleanTemps, session, tempDir, textOf, waitUntil } from './helpers.js';

afterEach(cleanTemps);

/** A pack whose exec engine runs `./engine.mjs` (a Node script) with the given source. */
async function execPack(source: string, extra = '') {
  const pack = tempDir();
  writeFileSync(join(pack, 'engine.mjs'), `#!${process.execPath}\n${source}`);
  chmodSync(join(pack, 'engine.mjs'), 0o755);
  const manifest = parsePackManifest(
    `apiVersion: agenthippo.ai/v1
kind: Agent
metadata: {name: ex, version: 1.0.0}
spec:
  engine: exec
  permissions: {fileAccess: workspace-write}
  exec:
    command: [./engine.mjs]
    env: {FROM_SPEC: spec-value}
${extra}`,
  );
  const engine = await loadPackEngine({
    packDir: pack,
    manifest,
    home: tempDir(),
    exec: { killGraceMs: 200, stderrTailBytes: 1024 },
  });
  return { engine, runtime: { workspaceRoot: tempDir(), stateDir: tempDir() } };
}

describe('the exec engine', () => {
  test('message on stdin, JSON lines to frames (last line without newline), env and cwd', async () => {
    const { engine, runtime } = await execPack(`
      let input = '';
      process.stdin.on('data', (c) => (input += c));
      process.stdin.on('end', () => {
        const out = (o) => JSON.stringify(o);
        const env = process.env;
        process.stdout.write([
          out({ type: 'progress', message: 'starting' }),
          'this line is not JSON',
          out({ type: 'something_new', x: 1 }),
          out({ type: 'tool_start', toolCallId: 't', name: 'ls', input: { p: '.' } }),
          out({ type: 'tool_end', toolCallId: 't', name: 'ls', output: ['a'] }),
          out({ type: 'session', nativeSessionId: 'exec-native' }),
          out({ type: 'text', delta: 'stdin=' + input + ';cwd=' + process.cwd() + ';' }),
          out({ type: 'text', delta: [env.FROM_SPEC, env.TURN_VAR, env.PACKWARDEN_FILE_ACCESS, env.PACKWARDEN_MODEL_TOKEN === 'model-token-xyz', env.PACKWARDEN_BASE_URL].join(',') }),
        ].join('\\n') + '\\n' + out({ type: 'text', delta: '|last' }));
      });
    `);
    const s = session(engine, runtime);
    const { events, outcome } = await s.run({
      message: 'hello exec',
      modelToken: 'model-token-xyz',
      baseUrl: 'http://gw',
      turnEnv: { TURN_VAR: 'turn-value' },
      permissions: { fileAccess: 'read' },
    });
    expect(textOf(events)).toBe(
      `stdin=hello exec;cwd=${runtime.workspaceRoot};spec-value,[redacted],read-only,true,http://gw|last`,
    );
    // Consecutive text frames may or may not be merged, depending on timing.
    expect(
      events.map((e) => e.type).filter((t, i, all) => t !== 'text' || all[i - 1] !== 'text'),
    ).toEqual(['accepted', 'progress', 'tool_start', 'tool_end', 'session', 'text', 'result']);
    expect(outcome).toMatchObject({
      type: 'result',
      stopReason: 'end_turn',
      nativeSessionId: 'exec-native',
    });
    await s.close();
  });

  test('a non-zero exit fails with a bounded, scrubbed stderr tail; an error event keeps its code', async () => {
    const { engine, runtime } = await execPack(`
      process.stdin.resume();
      process.stdin.on('end', () => {
        process.stderr.write('BEGIN ' + 'x'.repeat(100000) + ' token=' + process.env.PACKWARDEN_MODEL_TOKEN + ' END-MARK\\n');
        process.exitCode = 3;
      });
    `);
    const s = session(engine, runtime);
    const { outcome } = await s.run({ message: 'x', modelToken: 'very-secret-token' });
    expect(outcome.type).toBe('failed');
    if (outcome.type !== 'failed') return;
    expect(outcome.error.code).toBe('exec_failed');
    expect(outcome.error.message).toContain('exited with code 3');
    expect(outcome.error.message).toContain('END-MARK');
    expect(outcome.error.message).not.toContain('BEGIN');
    expect(outcome.error.message).not.toContain('very-secret-token');
    expect(outcome.error.message.length).toBeLessThan(2000);
    await s.close();

    const reporting = await execPack(`
      process.stdout.write(JSON.stringify({ type: 'error', code: 'quota_exceeded', message: 'no quota', retryable: true }));
    `);
    const s2 = session(reporting.engine, reporting.runtime);
    expect((await s2.run({ message: 'x' })).outcome).toMatchObject({
      type: 'failed',
      error: { code: 'quota_exceeded', message: 'no quota', retryable: true },
    });
    await s2.close();
  });

  test('the stderr tail never starts mid-token: a token written in two pieces is scrubbed before the tail is cut', async () => {
    const token = 'tok-SECRET-0123456789abcdef';
    // 1024-byte tail: without scrubbing first, it would start with the token's last 8 characters.
    const { engine, runtime } = await execPack(`
      process.stdin.resume();
      process.stdin.on('end', () => {
        const t = process.env.PACKWARDEN_MODEL_TOKEN;
        process.stderr.write('x'.repeat(5000) + t.slice(0, 13), () => {
          setTimeout(() => {
            process.stderr.write(t.slice(13) + 'y'.repeat(1024 - 8), () => { process.exitCode = 1; });
          }, 50);
        });
      });
    `);
    const s = session(engine, runtime);
    const { outcome } = await s.run({ message: 'x', modelToken: token });
    expect(outcome.type).toBe('failed');
    if (outcome.type !== 'failed') return;
    expect(outcome.error.message).toContain('exited with code 1');
    expect(outcome.error.message).toContain('yyyy');
    for (let n = 4; n <= token.length; n += 1)
      expect(outcome.error.message).not.toContain(token.slice(token.length - n));
    expect(outcome.error.message).not.toContain(token.slice(0, 13));
    await s.close();
  });

  test('cancel kills the whole process group, even a child that ignores SIGTERM', async () => {
    const { engine, runtime } = await execPack(`
      import { spawn } from 'node:child_process';
      process.on('SIGTERM', () => {});
      // The grandchild says when it ignores SIGTERM: a cancel before that would end it anyway.
      const child = spawn(process.execPath, ['-e', 'process.on("SIGTERM", () => {}); process.stdout.write("ready"); setInterval(() => {}, 1000)'], { stdio: ['ignore', 'pipe', 'ignore'] });
      child.stdout.once('data', () => {
        process.stdout.write(JSON.stringify({ type: 'text', delta: String(child.pid) }) + '\\n');
      });
      setInterval(() => {}, 1000);
    `);
    const s = session(engine, runtime, 5000);
    const controller = new AbortController();
    let grandchild = 0;
    const started = Date.now();
    const { outcome } = await s.run(
      { message: 'x' },
      {
        signal: controller.signal,
        onEvent: (event) => {
          if (event.type === 'text') {
            grandchild = Number(event.delta);
            controller.abort();
          }
        },
      },
    );
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'cancelled' });
    expect(grandchild).toBeGreaterThan(0);
    // Ended by the engine's own SIGKILL after its 200 ms grace, well before the host's 5 s.
    expect(Date.now() - started).toBeLessThan(4000);
    // The SIGKILL went to the whole group before the turn ended: nothing else will end the
    // grandchild, so the bound only allows for the kernel and init to reap it.
    expect(await waitUntil(() => !alive(grandchild), 2000)).toBe(true);
    await s.close();
  });

  test('when the command exits, what is left of its process group is killed and the turn ends', async () => {
    const { engine, runtime } = await execPack(`
      import { spawn } from 'node:child_process';
      // A background child that inherits stdout: it would keep the pipe open forever.
      const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: ['ignore', 'inherit', 'inherit'] });
      process.stdout.write(JSON.stringify({ type: 'text', delta: String(child.pid) }) + '\\n');
      process.exit(0);
    `);
    const s = session(engine, runtime);
    const { events, outcome } = await s.run({ message: 'x' });
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    const leftover = Number(textOf(events));
    expect(leftover).toBeGreaterThan(0);
    // Killed when the command exited, before the turn ended (it would have held stdout open).
    expect(await waitUntil(() => !alive(leftover), 2000)).toBe(true);
    await s.close();
  }, 10_000);

  test('a program that cannot start fails the turn', async () => {
    const pack = tempDir();
    const manifest = parsePackManifest(
      'apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: ex, version: 1.0.0}\nspec:\n  engine: exec\n  exec: {command: [./missing-program]}\n',
    );
    const engine = await loadPackEngine({ packDir: pack, manifest, home: tempDir() });
    const s = session(engine, { workspaceRoot: tempDir(), stateDir: tempDir() });
    expect((await s.run({ message: 'x' })).outcome).toMatchObject({
      type: 'failed',
      error: { code: 'exec_spawn_failed' },
    });
    await s.close();
  });
});
