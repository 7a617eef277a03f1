import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanTemps, examplePack, tempDir } from './helpers.js';
import { baseEnv, bin, fixture, packwarden, startCli, until } from './fixtures/sandbox.js';

afterEach(cleanTemps);

const probePack = fixture('probe-pack');

function stateDir(): string {
  return realpathSync(tempDir());
}

/** A script running a command on a real pseudo-terminal (Python's standard library), answering "yes" when asked. */
function ptyScript(): string {
  const script = join(tempDir(), 'pty-run.py');
  writeFileSync(
    script,
    `import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvpe(sys.argv[1], sys.argv[1:], dict(os.environ))
out, answered = b'', False
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
    if not answered and b'Proceed?' in out:
        os.write(fd, b'yes\\n')
        answered = True
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode('utf8', 'replace'))
sys.exit(os.waitstatus_to_exitcode(status))
`,
  );
  return script;
}

describe('packwarden run', () => {
  test('runs a turn of the example pack in a sandbox child: text, tool calls, and hello.txt', () => {
    const state = stateDir();
    const result = packwarden(['run', examplePack, 'hi there', '--state-dir', state]);
    expect(result.stderr).toContain('turn completed');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('Hello! You said: "hi there".');
    expect(result.stdout).toContain('[tool] list_workspace {"path":"."}');
    expect(result.stdout).toContain('[tool done] list_workspace → {"entries":[".packwarden/"]}');
    expect(result.stdout).toContain('I wrote hello.txt in your workspace.');
    expect(readFileSync(join(state, 'workspace', 'hello.txt'), 'utf8')).toBe(
      'Hello from hello-pack! You said: hi there\n',
    );
    expect(result.stderr).toContain(`workspace: ${join(state, 'workspace')}`);
  });

  test('the example engine writes nothing when the turn may only read', () => {
    const state = stateDir();
    const result = packwarden([
      'run',
      examplePack,
      'hi',
      '--state-dir',
      state,
      '--file-access',
      'read',
    ]);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('I did not write hello.txt: file access is "read-only".');
    expect(existsSync(join(state, 'workspace', 'hello.txt'))).toBe(false);
  });

  test('--json prints the frames: welcome first, the terminal frame last', () => {
    const result = packwarden(['run', examplePack, 'hi', '--json', '--state-dir', stateDir()]);
    expect(result.status).toBe(0);
    const frames = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; seq?: number });
    expect(frames[0]?.type).toBe('welcome');
    expect(frames.at(-1)).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(frames.map((f) => f.type)).toEqual(
      expect.arrayContaining(['accepted', 'progress', 'text', 'tool_start', 'tool_end']),
    );
    const seqs = frames.slice(1).map((f) => f.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  });

  test('the model token goes only in the run frame: not on the child’s argv or in its environment', () => {
    const token = 'run-model-token-0123456789';
    const viaFlag = packwarden([
      'run',
      probePack,
      'report',
      '--json',
      '--state-dir',
      stateDir(),
      '--model-token',
      token,
      '--base-url',
      'http://gateway.local/v1',
    ]);
    expect(viaFlag.status).toBe(0);
    const text = (stdout: string) =>
      stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { type: string; delta?: string })
        .filter((f) => f.type === 'text')
        .map((f) => f.delta)
        .join('');
    expect(JSON.parse(text(viaFlag.stdout))).toMatchObject({
      hasKey: true,
      keyInEnv: false,
      keyInArgv: false,
      baseUrl: 'http://gateway.local/v1',
    });
    expect(viaFlag.stdout + viaFlag.stderr).not.toContain(token);

    const viaEnv = packwarden(['run', probePack, 'report', '--json', '--state-dir', stateDir()], {
      ...baseEnv(),
      PACKWARDEN_MODEL_TOKEN: token,
      PACKWARDEN_BASE_URL: 'http://from-env/v1',
    });
    expect(viaEnv.status).toBe(0);
    expect(JSON.parse(text(viaEnv.stdout))).toMatchObject({
      hasKey: true,
      keyInEnv: false,
      keyInArgv: false,
      baseUrl: 'http://from-env/v1',
    });
  });

  test('a failed turn exits 1 and says why; a sandbox that cannot boot passes its cause on', () => {
    const failed = packwarden(['run', probePack, 'fail', '--state-dir', stateDir()]);
    expect(failed.status).toBe(1);
    expect(failed.stderr).toContain('turn failed: the probe failed on purpose (probe_failed)');
    const refused = packwarden([
      'run',
      probePack,
      'x',
      '--state-dir',
      stateDir(),
      '--require-signed-pack',
    ]);
    expect(refused.status).toBe(3);
    expect(refused.stderr).toContain('unsigned');
  });

  test('questions are declined when not on a terminal', () => {
    const result = packwarden(['run', probePack, 'ask', '--state-dir', stateDir()]);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('[question] Proceed? → declined (not a terminal)');
    expect(result.stdout).toContain('outcome:declined');
  });

  test('Ctrl-C cancels the turn cleanly and exits 130', async () => {
    const { child, out, exit } = startCli(['run', probePack, 'sleep', '--state-dir', stateDir()]);
    await until(() => out.stdout.includes('sleeping'), 10_000, 'the turn to start');
    child.kill('SIGINT');
    expect(await exit).toBe(130);
    expect(out.stderr).toContain('turn cancelled');
  });

  test('on a terminal it renders live with colours and asks the question', () => {
    const script = ptyScript();
    const run = (message: string) =>
      spawnSync(
        'python3',
        [script, process.execPath, bin, 'run', probePack, message, '--state-dir', stateDir()],
        { encoding: 'utf8', env: baseEnv(), timeout: 20_000 },
      );
    const asked = run('ask');
    expect(asked.status).toBe(0);
    expect(asked.stdout).toContain('? Proceed? [yes / no]');
    expect(asked.stdout).toContain('outcome:answered');
    const hello = spawnSync(
      'python3',
      [script, process.execPath, bin, 'run', examplePack, 'hi', '--state-dir', stateDir()],
      // A terminal says what it is: colours follow TERM (NO_COLOR / FORCE_COLOR) like Node's.
      { encoding: 'utf8', env: { ...baseEnv(), TERM: 'xterm-256color' }, timeout: 20_000 },
    );
    expect(hello.status).toBe(0);
    expect(hello.stdout).toContain('\u001b[36m▸ list_workspace');
    expect(hello.stdout).not.toContain('[tool]');
  });

  test('a question from the engine cannot drive the terminal: its prompt and options are shown escaped', () => {
    // The engine is pack code (or the model speaking through it): a question whose prompt holds an
    // OSC 52 clipboard write and a screen clear reached the terminal raw through readline.
    const asked = spawnSync(
      'python3',
      [
        ptyScript(),
        process.execPath,
        bin,
        'run',
        probePack,
        'ask-hostile',
        '--state-dir',
        stateDir(),
      ],
      { encoding: 'utf8', env: baseEnv(), timeout: 20_000 },
    );
    expect(asked.status).toBe(0);
    expect(asked.stdout).toContain('outcome:answered');
    expect(asked.stdout).toContain(
      '? \\x1b]52;c;cm0gLXJmIH4=\\x07Proceed?\\x1b[2J [yes / \\x1b[8mno]',
    );
    expect(asked.stdout).not.toContain('\u001b]52');
    expect(asked.stdout).not.toContain('\u001b[2J');
    expect(asked.stdout).not.toContain('\u001b[8m');
  });
});
