import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import type { WrappableCommand } from '../src/index.js';
import { loadCustomEngine } from '../src/index.js';
import { wireSession } from './contract-helpers.js';
import { cleanTemps, tempDir, textOf } from './helpers.js';

afterEach(cleanTemps);

const KEY = 'sk-routing-key-never-leaks-4242';

function engineFolder(source: string, manifest: Record<string, unknown> = {}): string {
  const dir = join(tempDir(), 'engines', 'e');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'engine.manifest.json'),
    JSON.stringify({ version: 2, id: 'e', entry: './engine.mjs', engineExport: 'E', ...manifest }),
  );
  writeFileSync(join(dir, 'engine.mjs'), source);
  return dir;
}

const pack = { id: 'p', version: '1.0.0', fileAccess: 'workspace-write' as const };
const runtime = () => ({ workspaceRoot: tempDir(), stateDir: tempDir() });

/** Loads an engine from `source`, runs one turn and closes the session: what the turn gave. */
async function oneTurn(source: string, ...run: Parameters<ReturnType<typeof wireSession>['run']>) {
  const rt = runtime();
  const engine = await loadCustomEngine(engineFolder(source), { pack, runtime: rt });
  const s = wireSession(engine, rt);
  try {
    return await s.run(...run);
  } finally {
    await s.close();
  }
}

describe('the engine process', () => {
  test('starts through the CommandWrapper, in the workspace, with only the environment it must have', async () => {
    const dir = engineFolder(
      `
      export class E {
        async run(turn) {
          await turn.emitter.text(JSON.stringify({
            mark: process.env.WRAPPED_BY_TEST ?? null,
            envNames: Object.keys(process.env).filter((n) => n !== 'WRAPPED_BY_TEST').sort(),
            keyInProcessEnv: Object.values(process.env).includes(turn.routing.apiKey),
            keyInTurnEnv: turn.env.E_API_KEY === turn.routing.apiKey,
            cwd: process.cwd(),
          }));
        }
      }`,
      { model: { apiKeyEnvVar: 'E_API_KEY' } },
    );
    const seen: WrappableCommand[] = [];
    const rt = runtime();
    const engine = await loadCustomEngine(dir, {
      pack,
      runtime: rt,
      wrap: (command) => {
        seen.push(command);
        return {
          file: '/usr/bin/env',
          args: ['WRAPPED_BY_TEST=yes', command.file, ...command.args],
          cwd: command.cwd,
          env: command.env,
        };
      },
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ file: process.execPath, cwd: rt.workspaceRoot });
    expect(seen[0]?.args).toContain('--input-type=module');
    const s = wireSession(engine, rt);
    const report = JSON.parse(textOf((await s.run({ message: 'hi', modelToken: KEY })).events));
    expect(report.mark).toBe('yes');
    const allowed = ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LANGUAGE', 'TZ', 'TMPDIR', 'TERM'];
    for (const name of report.envNames as string[])
      expect(allowed.includes(name) || name.startsWith('LC_')).toBe(true);
    expect(report.keyInProcessEnv).toBe(false);
    expect(report.keyInTurnEnv).toBe(true);
    expect(report.cwd).toBe(rt.workspaceRoot);
    await s.close();
  });

  test('the routing key reaches the engine and no frame, log or console line', async () => {
    const dir = engineFolder(`
      export class E {
        async run(turn) {
          const key = turn.routing.apiKey;
          console.log('stdout says ' + key);
          console.error('stderr says ' + key.slice(0, 10));
          process.stderr.write(key.slice(10) + ' and the rest\\n');
          turn.runtime.logger.info('logger says ' + key);
          await turn.emitter.progress('progress says ' + key);
          await turn.emitter.warning('leak', 'warning says ' + key);
          await turn.emitter.text('text says ' + key);
          await turn.emitter.toolStart('t', JSON.stringify({ key }), 'c1');
          throw new Error('failure says ' + key);
        }
        onMaintenance(logger) { logger.warn('maintenance says ' + globalThis.lastKey); }
      }`);
    const logs: string[] = [];
    const rt = runtime();
    const engine = await loadCustomEngine(dir, {
      pack,
      runtime: rt,
      onLog: (level, message) => logs.push(`${level} ${message}`),
    });
    const s = wireSession(engine, rt);
    const { outcome } = await s.run({ message: 'hi', modelToken: KEY });
    expect(outcome).toMatchObject({
      type: 'failed',
      error: { message: expect.stringContaining('failure says') },
    });
    await engine.onMaintenance?.({ reason: 'after_run', runId: 'x' }, rt);
    await s.close();
    const everything = `${s.wire()}\n${logs.join('\n')}`;
    expect(everything).toContain('text says [redacted]');
    expect(everything).not.toContain(KEY);
  });

  test.each([
    ['a line that is not JSON', "writeSync(3, 'not json\\n');"],
    ['an unknown message', "writeSync(3, JSON.stringify({ t: 'format-disk' }) + '\\n');"],
    [
      'an emit of an unknown method',
      "writeSync(3, JSON.stringify({ t: 'emit', id: 'x', seq: 1, method: 'exec', command: 'rm' }) + '\\n');",
    ],
    [
      'a line over 8 MiB',
      `const chunk = 'x'.repeat(65536);
       for (let sent = 0; sent < 9 * 1024 * 1024; ) {
         try { sent += writeSync(3, chunk); } catch { await new Promise((r) => setTimeout(r, 1)); }
       }`,
    ],
  ])('a child sending %s is stopped and the turn fails', async (_name, attack) => {
    const dir = engineFolder(`
      import { writeSync } from 'node:fs';
      export class E {
        async run(turn) {
          await turn.emitter.text('before');
          ${attack}
          await new Promise((resolve) => setTimeout(resolve, 60_000));
        }
      }`);
    const rt = runtime();
    const engine = await loadCustomEngine(dir, { pack, runtime: rt });
    const s = wireSession(engine, rt);
    const { outcome } = await s.run({ message: 'hi' });
    expect(outcome).toMatchObject({ type: 'failed', error: { code: 'engine_process_failed' } });
    await s.close();
  });

  test('a forged end for another run is ignored', async () => {
    const dir = engineFolder(`
      import { writeSync } from 'node:fs';
      export class E {
        async run(turn) {
          writeSync(3, JSON.stringify({ t: 'end', id: 'someone-else', ok: true }) + '\\n');
          await turn.emitter.text('still here');
        }
      }`);
    const rt = runtime();
    const engine = await loadCustomEngine(dir, { pack, runtime: rt });
    const s = wireSession(engine, rt);
    const { events, outcome } = await s.run({ message: 'hi' });
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(textOf(events)).toBe('still here');
    await s.close();
  });

  test('a run id as long as the frame protocol allows (256 characters) reaches the end', async () => {
    const { events, outcome } = await oneTurn(
      `export class E { async run(turn) { await turn.emitter.text('ran'); } }`,
      { runId: 'r'.repeat(256), message: 'hi' },
    );
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(textOf(events)).toBe('ran');
  });

  test('a question with more options than a frame carries is asked with the first 256', async () => {
    const { events, outcome } = await oneTurn(
      `
      export class E {
        async run(turn) {
          const options = Array.from({ length: 300 }, (_, i) => 'option ' + i);
          const answer = await turn.emitter.question({ prompt: 'which?', options, timeoutMs: 2 * 86400000 });
          await turn.emitter.text('picked ' + answer.selected[0]);
        }
      }`,
      { runId: 'q', message: 'hi' },
      { onQuestion: (q) => ({ selected: [q.options?.[255] ?? ''] }) },
    );
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    const question = events.find((e) => e.type === 'question') as { options?: string[] };
    expect(question.options).toHaveLength(256);
    expect(textOf(events)).toBe('picked option 255');
  });

  test('names, ids and codes over the frame caps are cut by the host, as for any engine', async () => {
    // runner-host README "Caps": names and ids are cut at 4 KiB. The engine child's own bound
    // (4 KiB, for codes too) stopped the child instead.
    const { events, outcome } = await oneTurn(
      `
      export class E {
        async run(turn) {
          await turn.emitter.toolStart({ toolCallId: 'i'.repeat(5000), name: 'n'.repeat(5000) });
          await turn.emitter.warning('c'.repeat(5000), 'long code');
          await turn.emitter.text('went on');
        }
      }`,
      { runId: 'caps', message: 'hi' },
    );
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(events.find((e) => e.type === 'tool_start')).toMatchObject({
      name: `${'n'.repeat(4096)}…[truncated]`,
      toolCallId: `${'i'.repeat(4096)}…[truncated]`,
    });
    // A code that is not a wire code (`a_b`, at most 64 characters) is named engine_warning.
    expect(events.find((e) => e.type === 'warning')).toMatchObject({
      code: 'engine_warning',
      message: 'long code',
    });
    expect(textOf(events)).toBe('went on');
  });

  test('a module that never finishes loading times out with ERR_ENGINE_PROCESS', async () => {
    const dir = engineFolder(`await new Promise(() => {}); export class E { run() {} }`);
    await expect(
      loadCustomEngine(dir, { pack, runtime: runtime(), startTimeoutMs: 500 }),
    ).rejects.toMatchObject({ code: 'ERR_ENGINE_PROCESS' });
  });

  test('a wrapper whose program cannot start gives ERR_ENGINE_PROCESS', async () => {
    const dir = engineFolder(`export class E { run() {} }`);
    await expect(
      loadCustomEngine(dir, {
        pack,
        runtime: runtime(),
        wrap: (command) => ({ ...command, file: '/nonexistent/bwrap' }),
      }),
    ).rejects.toMatchObject({ code: 'ERR_ENGINE_PROCESS' });
  });

  test('onMaintenance(logger) and dispose() reach the engine; dispose ends the process', async () => {
    const dir = engineFolder(`
      import { writeFileSync } from 'node:fs';
      import { join } from 'node:path';
      let home;
      export class E {
        async run(turn) { home = turn.session.engineHomeDir; await turn.emitter.text(String(process.pid)); }
        onMaintenance(logger) { writeFileSync(join(home, 'maintained'), 'yes'); logger.info('maintained'); }
        async dispose() { writeFileSync(join(home, 'disposed'), 'yes'); }
      }`);
    const rt = runtime();
    const logs: string[] = [];
    const engine = await loadCustomEngine(dir, {
      pack,
      runtime: rt,
      onLog: (level, message) => logs.push(`${level} ${message}`),
    });
    const s = wireSession(engine, rt);
    const pid = Number(textOf((await s.run({ message: 'hi' })).events));
    const home = join(rt.stateDir, 'engines', 'e', 'home');
    await engine.onMaintenance?.({ reason: 'after_run', runId: 'x' }, rt);
    expect(existsSync(join(home, 'maintained'))).toBe(true);
    expect(logs).toContain('info maintained');
    await s.close();
    await engine.dispose?.();
    expect(existsSync(join(home, 'disposed'))).toBe(true);
    expect(() => process.kill(pid, 0)).toThrow();
  });

  test('an engine state folder planted as a symlink fails the turn and nothing is made outside', async () => {
    const dir = engineFolder(
      `export class E { async run(turn) { await turn.emitter.text('ran'); } }`,
    );
    const rt = runtime();
    const outside = tempDir();
    mkdirSync(join(rt.stateDir, 'engines'));
    symlinkSync(outside, join(rt.stateDir, 'engines', 'e'));
    const engine = await loadCustomEngine(dir, { pack, runtime: rt });
    const s = wireSession(engine, rt);
    const { events, outcome } = await s.run({ message: 'hi' });
    expect(outcome).toMatchObject({ type: 'failed', error: { code: 'engine_state_refused' } });
    expect(textOf(events)).toBe('');
    expect(readdirSync(outside)).toEqual([]);
    await s.close();
  });

  test('turns that arrive together share one process (none is orphaned)', async () => {
    const dir = engineFolder(`
      export class E {
        async run(turn) { await turn.emitter.text(String(process.pid)); }
      }`);
    const engine = await loadCustomEngine(dir, { pack });
    const rt = runtime();
    const turn = async (runId: string) => {
      const out: string[] = [];
      const emitter = {
        text: async (delta: string) => void out.push(delta),
        thinking: async () => {},
        toolStart: async () => {},
        toolEnd: async () => {},
        progress: async () => {},
        warning: async () => {},
        session: async () => {},
        question: async () => ({ outcome: 'declined' as const }),
        log: () => {},
      };
      await engine.stream(
        'hi',
        { runId, engineId: 'e' },
        emitter,
        rt,
        new AbortController().signal,
      );
      return out.join('');
    };
    const pids = await Promise.all([turn('a'), turn('b'), turn('c')]);
    expect(new Set(pids).size).toBe(1);
    await engine.dispose?.();
    expect(() => process.kill(Number(pids[0]), 0)).toThrow();
  });

  test('under a real bubblewrap wrapper the engine runs, talks over fd 3, and writes only where bound', async () => {
    const dir = engineFolder(`
      import { writeFileSync } from 'node:fs';
      import { join } from 'node:path';
      export class E {
        async run(turn) {
          const attempt = (path) => { try { writeFileSync(path, 'x'); return 'written'; } catch (e) { return e.code; } };
          await turn.emitter.text(JSON.stringify({
            workspace: attempt(join(turn.workspaceRoot, 'ok.txt')),
            outside: attempt(turn.message),
          }));
        }
      }`);
    const rt = runtime();
    const outside = tempDir();
    const engine = await loadCustomEngine(dir, {
      pack,
      runtime: rt,
      wrap: (command) => ({
        file: '/usr/bin/bwrap',
        args: [
          '--ro-bind',
          '/',
          '/',
          '--dev',
          '/dev',
          '--proc',
          '/proc',
          '--bind',
          rt.workspaceRoot,
          rt.workspaceRoot,
          '--bind',
          rt.stateDir,
          rt.stateDir,
          '--unshare-all',
          '--die-with-parent',
          '--chdir',
          command.cwd,
          '--',
          command.file,
          ...command.args,
        ],
        cwd: command.cwd,
        env: command.env,
      }),
    });
    const s = wireSession(engine, rt);
    const { events, outcome } = await s.run({ message: join(outside, 'escape.txt') });
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(JSON.parse(textOf(events))).toEqual({ workspace: 'written', outside: 'EROFS' });
    expect(readdirSync(outside)).toEqual([]);
    await s.close();
  });

  test('a narrower turn never runs beside the process of a wider one, even when it will not dispose', async () => {
    // The writing turn's process records itself, and then refuses to finish dispose(); the
    // read-only turn that follows looks for it.
    const dir = engineFolder(`
      import { readFileSync, writeFileSync } from 'node:fs';
      import { join } from 'node:path';
      export class E {
        async run(turn) {
          const mark = join(turn.workspaceRoot, 'writer.pid');
          if (turn.permissions.fileAccess === 'workspace-write') {
            this.writer = true;
            writeFileSync(mark, String(process.pid));
            return;
          }
          const pid = Number(readFileSync(mark, 'utf8'));
          let writerAlive = true;
          try { process.kill(pid, 0); } catch { writerAlive = false; }
          await turn.emitter.text(JSON.stringify({ writerAlive, same: pid === process.pid }));
        }
        async dispose() {
          if (this.writer) await new Promise(() => {});
        }
      }`);
    const rt = runtime();
    const engine = await loadCustomEngine(dir, { pack, runtime: rt, killGraceMs: 1500 });
    const s = wireSession(engine, rt);
    const write = await s.run({ message: 'write', permissions: { fileAccess: 'write' } });
    expect(write.outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    const read = await s.run({ message: 'read', permissions: { fileAccess: 'read' } });
    expect(read.outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(JSON.parse(textOf(read.events))).toEqual({ writerAlive: false, same: false });
    await s.close();
  });

  test('engine output is bounded: long lines are cut, a flood is dropped after the per-turn budget', async () => {
    const dir = engineFolder(`
      export class E {
        async run(turn) {
          turn.runtime.logger.info('k'.repeat(8192 - 4) + '${KEY}' + 'k'.repeat(100));
          for (let i = 0; i < 10_050; i += 1) turn.runtime.logger.debug('line ' + i);
          await turn.emitter.text('flooded');
        }
      }`);
    const rt = runtime();
    const engine = await loadCustomEngine(dir, { pack, runtime: rt });
    const s = wireSession(engine, rt);
    const { outcome } = await s.run({ message: 'hi', modelToken: KEY });
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    await s.close();
    const wire = s.wire();
    expect(wire).toContain('… (cut)');
    // Scrubbed before cut: not even the first characters of the key survive at the cut.
    expect(wire).not.toContain(`k${KEY.slice(0, 4)}`);
    expect(wire).toContain('the rest of this turn');
    expect(wire).toContain('"line 9997"');
    expect(wire).not.toContain('"line 10000"');
  });
});
