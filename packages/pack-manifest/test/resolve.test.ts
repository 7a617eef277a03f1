import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import {
  listInstalledPacks,
  PackManifestError,
  packwardenHome,
  readPackwardenEnv,
  readPackwardenFlag,
  resolvePack,
} from '@packwarden/pack-manifest';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function temp(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pw-resolve-'));
  dirs.push(dir);
  return dir;
}

function writePack(dir: string, name: string, version: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'agent.yaml'),
    `apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: ${name}, version: ${version}}\n`,
  );
  return dir;
}

function install(home: string, name: string, versions: string[], current?: string): void {
  for (const version of versions) writePack(join(home, 'agents', name, version), name, version);
  if (current !== undefined)
    writeFileSync(join(home, 'agents', name, 'current.txt'), `${current}\n`);
}

async function refusal(promise: Promise<unknown>): Promise<PackManifestError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(PackManifestError);
  return error as PackManifestError;
}

describe('resolvePack', () => {
  test('a path is used as it is, relative to cwd', async () => {
    const cwd = temp();
    const dir = writePack(join(cwd, 'packs', 'hello'), 'hello', '1.0.0');
    expect(await resolvePack('./packs/hello', { cwd, env: {} })).toEqual({ dir, source: 'path' });
    expect(await resolvePack(dir, { cwd: '/', env: {} })).toEqual({ dir, source: 'path' });
    expect((await refusal(resolvePack('./nope', { cwd, env: {} }))).code).toBe(
      'ERR_PACK_NOT_FOUND',
    );
  });

  test('a name: workspace first, then $PACKWARDEN_HOME following current.txt', async () => {
    const cwd = temp();
    const home = temp();
    install(home, 'hello', ['1.0.0', '1.1.0'], '1.1.0');
    expect(await resolvePack('hello', { cwd, env: { PACKWARDEN_HOME: home } })).toEqual({
      dir: join(home, 'agents', 'hello', '1.1.0'),
      source: 'home',
      name: 'hello',
      version: '1.1.0',
    });
    expect((await resolvePack('hello@1.0.0', { cwd, env: { PACKWARDEN_HOME: home } })).dir).toBe(
      join(home, 'agents', 'hello', '1.0.0'),
    );
    const workspace = writePack(join(cwd, '.packwarden', 'agents', 'hello'), 'hello', '9.9.9');
    expect(await resolvePack('hello', { cwd, env: { PACKWARDEN_HOME: home } })).toEqual({
      dir: workspace,
      source: 'workspace',
      name: 'hello',
    });
    // An explicit version always means an installed one.
    expect((await resolvePack('hello@1.0.0', { cwd, env: { PACKWARDEN_HOME: home } })).source).toBe(
      'home',
    );
  });

  test('AGENTHIPPO_HOME works as an alias; PACKWARDEN_HOME wins', async () => {
    const ours = temp();
    const theirs = temp();
    install(ours, 'a', ['1.0.0'], '1.0.0');
    install(theirs, 'a', ['2.0.0'], '2.0.0');
    const cwd = temp();
    expect((await resolvePack('a', { cwd, env: { AGENTHIPPO_HOME: theirs } })).version).toBe(
      '2.0.0',
    );
    expect(
      (await resolvePack('a', { cwd, env: { AGENTHIPPO_HOME: theirs, PACKWARDEN_HOME: ours } }))
        .version,
    ).toBe('1.0.0');
    expect(readPackwardenEnv({ PACKWARDEN_X: '', AGENTHIPPO_X: 'y' }, 'X')).toBe('y');
    expect(packwardenHome({ HOME: '/home/u' })).toBe('/home/u/.packwarden');
    for (const on of ['1', 'true', 'TRUE', 'yes', 'on', ' 1 ']) {
      expect(readPackwardenFlag({ PACKWARDEN_X: on }, 'X')).toBe(true);
    }
    for (const off of ['0', 'false', 'no', 'off', '']) {
      expect(readPackwardenFlag({ PACKWARDEN_X: off }, 'X')).toBe(false);
    }
    expect(readPackwardenFlag({ AGENTHIPPO_X: 'yes' }, 'X')).toBe(true);
    expect(readPackwardenFlag({ PACKWARDEN_X: 'no', AGENTHIPPO_X: 'yes' }, 'X')).toBe(false);
  });

  test('~/ is the home packwardenHome finds, never a folder under cwd when HOME is empty or relative', async () => {
    // A checkout (cwd) holding `agents/<x>`: with HOME unset, empty or relative, `~/agents/<x>`
    // resolved to the checkout's own folder, so a quoted `~/…` pack argument ran the checkout's pack.
    const cwd = temp();
    const name = `pw-tilde-${Math.random().toString(16).slice(2)}`;
    writePack(join(cwd, 'agents', name), 'evil', '1.0.0');
    writePack(join(cwd, 'rel', 'agents', name), 'evil', '1.0.0');
    const accountHome = userInfo().homedir;
    for (const env of [{}, { HOME: '' }, { HOME: 'rel' }]) {
      const error = await refusal(resolvePack(`~/agents/${name}`, { cwd, env }));
      expect(error.code).toBe('ERR_PACK_NOT_FOUND');
      expect(error.file).toBe(join(accountHome, 'agents', name));
    }
    const home = temp();
    const dir = writePack(join(home, 'agents', name), 'mine', '1.0.0');
    expect(await resolvePack(`~/agents/${name}`, { cwd, env: { HOME: home } })).toEqual({
      dir,
      source: 'path',
    });
    expect((await resolvePack('~', { cwd, env: { HOME: home } })).dir).toBe(home);
  });

  test('a bare name that is not installed falls back to a pack folder under cwd', async () => {
    const cwd = temp();
    const dir = writePack(join(cwd, 'examples'), 'hello', '1.0.0');
    expect(await resolvePack('examples', { cwd, env: { PACKWARDEN_HOME: temp() } })).toEqual({
      dir,
      source: 'path',
    });
  });

  test('current.txt cannot point outside the pack folder', async () => {
    const home = temp();
    install(home, 'evil', ['1.0.0']);
    for (const content of ['../../../etc', '/etc', '', '1.0.0/../../x']) {
      writeFileSync(join(home, 'agents', 'evil', 'current.txt'), content);
      const error = await refusal(
        resolvePack('evil', { cwd: temp(), env: { PACKWARDEN_HOME: home } }),
      );
      expect(error.code).toBe('ERR_PACK_CURRENT_INVALID');
    }
  });

  test('current.txt that is a symlink, a FIFO or a large file: refused, never followed or waited on', async () => {
    const home = temp();
    install(home, 'evil', ['1.0.0']);
    const current = join(home, 'agents', 'evil', 'current.txt');
    const elsewhere = join(temp(), 'v');
    writeFileSync(elsewhere, '1.0.0\n');
    const plant = [
      () => symlinkSync(elsewhere, current),
      () => execFileSync('mkfifo', [current]),
      () => writeFileSync(current, `1.0.0${' '.repeat(4096)}\n`),
    ];
    for (const make of plant) {
      rmSync(current, { force: true });
      make();
      const error = await refusal(
        resolvePack('evil', { cwd: temp(), env: { PACKWARDEN_HOME: home } }),
      );
      expect(error.code).toBe('ERR_PACK_CURRENT_INVALID');
    }
    // The same folder with a plain current.txt resolves.
    rmSync(current, { force: true });
    writeFileSync(current, '1.0.0\n');
    expect(
      (await resolvePack('evil', { cwd: temp(), env: { PACKWARDEN_HOME: home } })).version,
    ).toBe('1.0.0');
  });

  test('refuses references that are neither names nor paths, and unknown names', async () => {
    for (const ref of ['Hello', 'a..b', 'hello@latest', 'hello@1', '', 'a_b']) {
      expect((await refusal(resolvePack(ref, { cwd: temp(), env: {} }))).code).toBe(
        'ERR_PACK_REF_INVALID',
      );
    }
    const error = await refusal(
      resolvePack('ghost', { cwd: temp(), env: { PACKWARDEN_HOME: temp() } }),
    );
    expect(error.code).toBe('ERR_PACK_NOT_FOUND');
    expect(error.message).toContain('.packwarden/agents/ghost');
    expect(
      (await refusal(resolvePack('hello@2.0.0', { cwd: temp(), env: { PACKWARDEN_HOME: temp() } })))
        .code,
    ).toBe('ERR_PACK_NOT_FOUND');
  });
});

describe('listInstalledPacks', () => {
  test('lists workspace and home packs, with problems instead of failures', async () => {
    const cwd = temp();
    const home = temp();
    writePack(join(cwd, '.packwarden', 'agents', 'local-one'), 'local-one', '0.1.0');
    install(home, 'good', ['1.0.0', '1.2.0'], '1.2.0');
    install(home, 'broken', ['1.0.0'], 'garbage');
    install(home, 'dangling', ['1.0.0'], '2.0.0');
    mkdirSync(join(home, 'agents', 'Not_A_Pack'));
    const packs = await listInstalledPacks({ cwd, env: { PACKWARDEN_HOME: home } });
    expect(
      packs.map((pack) => [
        pack.source,
        pack.name,
        pack.version ?? null,
        pack.problem === undefined,
      ]),
    ).toEqual([
      ['workspace', 'local-one', null, true],
      ['home', 'broken', null, false],
      ['home', 'dangling', '2.0.0', false],
      ['home', 'good', '1.2.0', true],
    ]);
    expect(packs.find((pack) => pack.name === 'good')!.versions).toEqual(['1.0.0', '1.2.0']);
  });

  test('lists what resolvePack resolves, symlinks included: every entry is the folder the name runs', async () => {
    // Only real folders were listed, while resolvePack follows a symlink: a symlink in the
    // workspace's .packwarden/agents ran under the name and `pack verify --installed` never saw it.
    const cwd = temp();
    const home = temp();
    const elsewhere = writePack(join(temp(), 'linked'), 'linked', '3.0.0');
    mkdirSync(join(cwd, '.packwarden', 'agents'), { recursive: true });
    symlinkSync(elsewhere, join(cwd, '.packwarden', 'agents', 'linked'));
    // Not packs resolvePack would take, as before: a file, a dangling link.
    writeFileSync(join(cwd, '.packwarden', 'agents', 'a-file'), 'x');
    symlinkSync(join(cwd, 'missing'), join(cwd, '.packwarden', 'agents', 'dangling'));
    const otherHome = temp();
    install(otherHome, 'moved', ['1.0.0'], '1.0.0');
    mkdirSync(join(home, 'agents'));
    symlinkSync(join(otherHome, 'agents', 'moved'), join(home, 'agents', 'moved'));
    install(home, 'version-link', ['1.0.0'], '2.0.0');
    symlinkSync(
      join(home, 'agents', 'version-link', '1.0.0'),
      join(home, 'agents', 'version-link', '2.0.0'),
    );
    const env = { PACKWARDEN_HOME: home };
    const packs = await listInstalledPacks({ cwd, env });
    expect(
      packs.map((pack) => [pack.source, pack.name, pack.version ?? null, pack.problem ?? null]),
    ).toEqual([
      ['workspace', 'linked', null, null],
      ['home', 'moved', '1.0.0', null],
      ['home', 'version-link', '2.0.0', null],
    ]);
    expect(packs.find((pack) => pack.name === 'version-link')!.versions).toEqual([
      '1.0.0',
      '2.0.0',
    ]);
    for (const pack of packs)
      expect(pack.dir).toBe((await resolvePack(pack.name, { cwd, env })).dir);
  });

  test('a location with more pack names than maxPacks is refused, never listed short (a shadowing pack would go unchecked)', async () => {
    // A workspace (a pull request) filled .packwarden/agents with 10,000 empty files whose names
    // sort before "code-reviewer": the listing stopped after them, so `pack verify --installed`
    // checked only the locked install in $PACKWARDEN_HOME while the name ran the workspace's pack.
    const cwd = temp();
    const home = temp();
    install(home, 'code-reviewer', ['1.0.0'], '1.0.0');
    const agents = join(cwd, '.packwarden', 'agents');
    mkdirSync(agents, { recursive: true });
    for (let i = 0; i < 10_000; i++) writeFileSync(join(agents, `a-${i}`), '');
    writePack(join(agents, 'code-reviewer'), 'code-reviewer', '6.6.6');
    const env = { PACKWARDEN_HOME: home };
    const runs = await resolvePack('code-reviewer', { cwd, env });
    expect(runs).toMatchObject({ source: 'workspace', dir: join(agents, 'code-reviewer') });
    const error = await refusal(listInstalledPacks({ cwd, env }));
    expect(error.code).toBe('ERR_PACK_LIST_TOO_LARGE');
    expect(error.file).toBe(agents);
    // The same bound for $PACKWARDEN_HOME, and a smaller one given by the caller.
    const small = await refusal(
      listInstalledPacks({ cwd: temp(), env: { PACKWARDEN_HOME: home }, maxPacks: 0 }),
    );
    expect(small.code).toBe('ERR_PACK_LIST_TOO_LARGE');
    expect(small.file).toBe(join(home, 'agents'));
    // Within the bound, the shadowing pack is listed: the one the name runs.
    const listed = await listInstalledPacks({ cwd, env, maxPacks: 10_001 });
    expect(listed.filter((pack) => pack.name === 'code-reviewer').map((pack) => pack.dir)).toEqual([
      runs.dir,
      join(home, 'agents', 'code-reviewer', '1.0.0'),
    ]);
  });

  test('a workspace agents folder that can be searched but not read is refused, never listed as empty', async () => {
    const cwd = temp();
    const home = temp();
    install(home, 'code-reviewer', ['1.0.0'], '1.0.0');
    const agents = join(cwd, '.packwarden', 'agents');
    writePack(join(agents, 'code-reviewer'), 'code-reviewer', '6.6.6');
    const env = { PACKWARDEN_HOME: home };
    let outcome: {
      source?: string | undefined;
      code?: string | undefined;
      file?: string | undefined;
    };
    if (process.getuid?.() !== 0) {
      chmodSync(agents, 0o311);
      try {
        const { source } = await resolvePack('code-reviewer', { cwd, env });
        const error = await refusal(listInstalledPacks({ cwd, env }));
        outcome = { source, code: error.code, file: error.file };
      } finally {
        chmodSync(agents, 0o755);
      }
    } else {
      // Root reads every folder: both calls run as nobody, on the built package, over trees
      // nobody owns, with the agents folder searchable but not readable to it.
      for (const dir of [cwd, home]) execFileSync('chown', ['-R', '65534:65534', dir]);
      chmodSync(agents, 0o311);
      const entry = join(import.meta.dirname, '..', 'dist', 'resolve-entry.js');
      const args = JSON.stringify({ cwd, env });
      const script = `import(${JSON.stringify(entry)}).then(async (m) => { const o = ${args}; const { source } = await m.resolvePack('code-reviewer', o); const e = await m.listInstalledPacks(o).then(() => ({}), (e) => e); console.log(JSON.stringify({ source, code: e.code, file: e.file })); })`;
      const out = execFileSync(
        'setpriv',
        ['--reuid=65534', '--regid=65534', '--clear-groups', '--', process.execPath, '-e', script],
        { encoding: 'utf8' },
      );
      outcome = JSON.parse(out) as typeof outcome;
    }
    expect(outcome).toEqual({ source: 'workspace', code: 'ERR_MANIFEST_IO', file: agents });
  });

  test('an empty or missing home lists nothing', async () => {
    expect(
      await listInstalledPacks({ cwd: temp(), env: { PACKWARDEN_HOME: join(temp(), 'missing') } }),
    ).toEqual([]);
  });
});
