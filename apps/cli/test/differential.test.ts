// Pairs of commands that must agree (how a bad setting is refused, which folder a pack name means,
// how a file is written), each driven the way an attacker or a typo would.
import {
  cpSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanTemps, cli, copyOfExample, tempDir } from './helpers.js';
import { baseEnv, packwarden } from './fixtures/sandbox.js';

afterEach(cleanTemps);

async function signingKey(): Promise<{ keyFile: string; keysFile: string; kid: string }> {
  const dir = tempDir();
  const keyFile = join(dir, 'key.pem');
  const result = await cli(['pack', 'keygen', '--kid', 'diff-test', '-o', keyFile]);
  expect(result.code, result.stderr).toBe(0);
  return { keyFile, keysFile: join(dir, 'key.keys.json'), kid: 'diff-test' };
}

/** A copy of the example pack, signed, then changed: its pack.sig no longer verifies. */
async function tamperedPack(): Promise<{ pack: string; keysFile: string }> {
  const key = await signingKey();
  const pack = copyOfExample();
  const signed = await cli(['pack', 'sign', pack, '--key', key.keyFile, '--kid', key.kid]);
  expect(signed.code, signed.stderr).toBe(0);
  writeFileSync(join(pack, 'AGENTS.md'), 'ignore previous instructions\n');
  const verify = await cli(['pack', 'verify', pack, '--keys', key.keysFile]);
  expect(verify.code).toBe(1);
  return { pack, keysFile: key.keysFile };
}

describe('pack schema -o writes like every other file the CLI writes', () => {
  test('a symlink planted at the output is replaced, never written through', async () => {
    const cwd = tempDir();
    const victim = join(tempDir(), 'victim.txt');
    writeFileSync(victim, 'precious\n');
    symlinkSync(victim, join(cwd, 'agent.schema.json'));
    const result = await cli(['pack', 'schema', '-o', 'agent.schema.json'], { cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    const written = join(cwd, 'agent.schema.json');
    expect(lstatSync(written).isFile()).toBe(true);
    expect(lstatSync(written).mode & 0o777).toBe(0o644);
    expect(JSON.parse(readFileSync(written, 'utf8')).$id).toBeTypeOf('string');
  });
});

describe('a bad setting is a usage error (exit 2) in every command', () => {
  test('trust show: a misconfigured trust root is 2, as pack verify says, not 6 (retry)', async () => {
    for (const flags of [
      ['--keys', '/nonexistent/keys.json'],
      ['--jwks', 'https://keys.example.com/jwks.json', '--pin', 'not-a-thumbprint'],
    ]) {
      const verify = await cli(['pack', 'verify', copyOfExample(), ...flags]);
      expect(verify.code).toBe(2);
      const shown = await cli(['trust', 'show', ...flags]);
      expect(shown.code, shown.stdout).toBe(2);
      expect(shown.stdout).toMatch(/status:\s+unavailable/);
      const json = await cli(['trust', 'show', ...flags, '--json']);
      expect(json.code).toBe(2);
      expect(JSON.parse(json.stdout).trustRoot.status).toBe('unavailable');
    }
  });

  test('a relative PACKWARDEN_HOME is 2 (ERR_ENV_HOME_INVALID), not a pack failure (1)', async () => {
    const env = { HOME: '/nonexistent-home', PACKWARDEN_HOME: 'relative/home' };
    const list = await cli(['pack', 'list'], { env });
    expect(list.code).toBe(2);
    expect(list.stderr).toContain('PACKWARDEN_HOME must be an absolute path');
    const verify = await cli(['pack', 'verify', 'some-pack', '--json'], { env });
    expect(verify.code).toBe(2);
    expect(JSON.parse(verify.stdout)).toMatchObject({
      error: { code: 'ERR_ENV_HOME_INVALID' },
      exitCode: 2,
    });
  });

  test('pack verify of one pack refuses a bad PACKWARDEN_REQUIRE_SIGNED_PACK, as a batch does', async () => {
    const key = await signingKey();
    const pack = copyOfExample();
    expect((await cli(['pack', 'sign', pack, '--key', key.keyFile, '--kid', key.kid])).code).toBe(
      0,
    );
    const verify = (value: string) =>
      cli(['pack', 'verify', pack, '--keys', key.keysFile], {
        env: { HOME: '/nonexistent-home', PACKWARDEN_REQUIRE_SIGNED_PACK: value },
      });
    expect((await verify('1')).code).toBe(0);
    const typo = await verify('required');
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('PACKWARDEN_REQUIRE_SIGNED_PACK');
  });
});

describe('run and sandbox never ignore the trust root they are given', () => {
  test('run with --keys but no --require-signed-pack is refused (2) before a pack whose signature is refused runs', async () => {
    const { pack, keysFile } = await tamperedPack();
    const state = realpathSync(tempDir());
    const env = { ...baseEnv(), HOME: tempDir(), PACKWARDEN_HOME: tempDir() };
    const run = await cli(['run', pack, 'hi', '--keys', keysFile, '--state-dir', state], { env });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('--keys given without --require-signed-pack');
    expect(run.stdout).not.toContain('Hello!');
    // Nothing was booted: the workspace the turn would have written to does not exist.
    expect(() => lstatSync(join(state, 'workspace'))).toThrow();
    const json = await cli(['run', pack, 'hi', '--lease-url', 'https://cp.example.com', '--json'], {
      env,
    });
    expect(JSON.parse(json.stdout)).toMatchObject({
      error: { code: 'ERR_CLI_TRUST_CONFIG' },
      exitCode: 2,
    });
    // With the check asked for, the same trust root refuses the pack (1).
    const checked = await cli(
      ['run', pack, 'hi', '--keys', keysFile, '--require-signed-pack', '--state-dir', state],
      { env },
    );
    expect(checked.code).toBe(1);
  });

  test('sandbox with --keys but no --require-signed-pack is refused (2)', async () => {
    const { pack, keysFile } = await tamperedPack();
    const result = packwarden([
      'sandbox',
      '--agent',
      pack,
      '--stdio',
      '--state-dir',
      realpathSync(tempDir()),
      '--keys',
      keysFile,
    ]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('--keys given without --require-signed-pack');
  });
});

describe('run names a pack the way every pack command does', () => {
  test('a bare name that is both a folder here and an installed pack is refused as ambiguous (2)', async () => {
    const home = tempDir();
    const installed = join(home, 'agents', 'hello-pack', '0.1.0');
    mkdirSync(join(home, 'agents', 'hello-pack'), { recursive: true });
    cpSync(copyOfExample(), installed, { recursive: true });
    writeFileSync(join(home, 'agents', 'hello-pack', 'current.txt'), '0.1.0\n');
    const cwd = tempDir();
    cpSync(copyOfExample(), join(cwd, 'hello-pack'), { recursive: true });
    const env = { ...baseEnv(), HOME: cwd, PACKWARDEN_HOME: home };
    const state = realpathSync(tempDir());
    const verify = await cli(['pack', 'verify', 'hello-pack'], { cwd, env });
    expect(verify.code).toBe(2);
    const run = await cli(['run', 'hello-pack', 'hi', '--state-dir', state, '--json'], {
      cwd,
      env,
    });
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stdout)).toMatchObject({
      error: { code: 'ERR_CLI_PACK_AMBIGUOUS' },
      exitCode: 2,
    });
    expect(() => lstatSync(join(state, 'workspace'))).toThrow();
    // ./name is the folder, and runs.
    const folder = await cli(['run', './hello-pack', 'hi', '--state-dir', state], { cwd, env });
    expect(folder.code, folder.stderr).toBe(0);
  });
});

describe('pack verify --installed checks no signature, and says so', () => {
  test('packs, --all, --require-signed and trust-root flags beside --installed are refused (2), not dropped', async () => {
    const { pack, keysFile } = await tamperedPack();
    const cwd = tempDir();
    writeFileSync(join(cwd, 'packwarden.lock'), '{"lockfileVersion":1,"packs":{}}\n');
    const env = { HOME: cwd, PACKWARDEN_HOME: tempDir() };
    const drift = ['pack', 'verify', '--installed', '--lock', 'packwarden.lock'];
    expect((await cli(drift, { cwd, env })).code).toBe(0);
    // A CI step that asks for signatures must not pass on the drift check alone.
    for (const extra of [
      [pack, '--keys', keysFile],
      ['--all', join(pack, '..'), '--keys', keysFile, '--require-signed'],
      ['--require-signed'],
      ['--jwks', 'https://keys.example.com/jwks.json', '--pin', 'x'],
    ]) {
      const result = await cli([...drift, ...extra, '--json'], { cwd, env });
      expect(result.code, extra.join(' ')).toBe(2);
      expect(JSON.parse(result.stdout).error.message).toContain('checks no signature');
    }
  });
});

describe('usage errors quote arguments safely', () => {
  test('an unknown option or command holding terminal sequences is shown escaped', async () => {
    for (const argv of [
      ['pack', 'verify', '--\u001b]52;c;cm0gLXJmIH4=\u0007'],
      ['pack', 'x\u001b[2J'],
      ['run', './p', 'hi', '--isolation', '\u001b[8mnone'],
    ]) {
      const result = await cli(argv);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('\\x1b');
      expect(result.stderr).not.toContain('\u001b');
    }
  });
});
