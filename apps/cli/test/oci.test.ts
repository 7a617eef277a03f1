import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { pushPackArtifact, exportPack } from '@packwarden/store-client';
import {
  startRegistry,
  type RunningRegistry,
} from '../../../packages/store-client/test/oci/registry.js';
import { cleanTemps, cli, copyOfExample, examplePack, tempDir } from './helpers.js';

afterEach(cleanTemps);

describe('pack export', () => {
  test('same bytes after touch and chmod of the files; installs back with pack install ./x.tgz', async () => {
    const pack = copyOfExample();
    const out = tempDir();
    const first = await cli(['pack', 'export', pack, '-o', join(out, 'a.tgz'), '--json']);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const summary = JSON.parse(first.stdout) as { sha256: string; digest: string; size: number };
    const bytesA = readFileSync(join(out, 'a.tgz'));
    expect(summary.size).toBe(bytesA.length);
    expect(summary.sha256).toBe(createHash('sha256').update(bytesA).digest('hex'));
    expect(summary.digest).toMatch(/^[0-9a-f]{64}$/);

    // Change only metadata: mtimes and (non-executable) permission bits.
    for (const name of readdirSync(pack)) {
      const file = join(pack, name);
      utimesSync(file, new Date(2001, 1, 1), new Date(2001, 1, 1));
    }
    chmodSync(join(pack, 'agent.yaml'), 0o600);
    const second = await cli(['pack', 'export', pack, '-o', join(out, 'b.tgz')]);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain(`sha256 ${summary.sha256}`);
    expect(readFileSync(join(out, 'b.tgz')).equals(bytesA)).toBe(true);

    const to = join(tempDir(), 'installed');
    const installed = await cli(['pack', 'install', join(out, 'a.tgz'), '--to', to, '--json'], {
      cwd: out,
      env: { HOME: '/nonexistent-home' },
    });
    expect(installed.stderr).toBe('');
    expect(installed.code).toBe(0);
    expect(
      (JSON.parse(installed.stdout) as { installed: { digest: string } }).installed.digest,
    ).toBe(summary.digest);
    expect(readFileSync(join(to, 'agent.yaml'))).toEqual(readFileSync(join(pack, 'agent.yaml')));
  });

  test('a folder that is no pack is refused, nothing written', async () => {
    const out = tempDir();
    const result = await cli(['pack', 'export', out, '-o', join(out, 'x.tgz')]);
    expect(result.code).not.toBe(0);
    expect(existsSync(join(out, 'x.tgz'))).toBe(false);
    expect(readdirSync(out)).toEqual([]);
  });
});

describe('OCI registries (the real distribution registry on 127.0.0.1)', () => {
  let registry: RunningRegistry;
  beforeAll(async () => {
    registry = await startRegistry();
  }, 30_000);
  afterAll(async () => {
    await registry?.stop();
  });
  const env = () => ({ HOME: '/nonexistent-home', DOCKER_CONFIG: tempDir() });

  test('push, re-push (same digest), info, list, install by tag, by digest and without a tag', async () => {
    const repo = `oci://${registry.host}/packs/hello`;
    const pushed = await cli(['store', 'push', examplePack, repo, '--plain-http', '--json'], {
      env: env(),
    });
    expect(pushed.stderr).toBe('');
    expect(pushed.code).toBe(0);
    const first = (
      JSON.parse(pushed.stdout) as {
        pushed: { manifestDigest: string; tag: string; meta: { version: string; digest: string } };
      }
    ).pushed;
    expect(first.tag).toBe(first.meta.version);
    const again = await cli(['store', 'push', examplePack, repo, '--plain-http'], { env: env() });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`manifest ${first.manifestDigest}`);

    const info = await cli(['store', 'info', `${repo}:${first.tag}`, '--plain-http'], {
      env: env(),
    });
    expect(info.code).toBe(0);
    expect(info.stdout).toContain(first.manifestDigest);
    expect(info.stdout).toContain(first.meta.digest);
    const list = await cli(['store', 'list', repo, '--plain-http', '--json'], { env: env() });
    expect(list.code).toBe(0);
    expect((JSON.parse(list.stdout) as { tags: string[] }).tags).toEqual([first.tag]);

    const byTag = join(tempDir(), 'by-tag');
    const tagged = await cli(
      ['pack', 'install', `${repo}:${first.tag}`, '--to', byTag, '--plain-http', '--json'],
      { env: env() },
    );
    expect(tagged.stderr).toBe('');
    expect(tagged.code).toBe(0);
    expect((JSON.parse(tagged.stdout) as { installed: { digest: string } }).installed.digest).toBe(
      first.meta.digest,
    );
    expect(readFileSync(join(byTag, 'agent.yaml'))).toEqual(
      readFileSync(join(examplePack, 'agent.yaml')),
    );

    const home = tempDir();
    const byDigest = await cli(
      ['store', 'install', `${repo}@${first.manifestDigest}`, '--plain-http'],
      { env: { ...env(), PACKWARDEN_HOME: home } },
    );
    expect(byDigest.stderr).toBe('');
    expect(byDigest.code).toBe(0);
    expect(byDigest.stdout).toContain(`digest ${first.meta.digest}`);
    expect(existsSync(join(home, 'agents'))).toBe(true);

    const untagged = join(tempDir(), 'untagged');
    const highest = await cli(['pack', 'install', repo, '--to', untagged, '--plain-http'], {
      env: env(),
    });
    expect(highest.code).toBe(0);
    expect(highest.stdout).toContain(first.manifestDigest);
  }, 60_000);

  test('an independent client (plain HTTP, distribution API) finds the layer equal to pack export bytes', async () => {
    const out = join(tempDir(), 'hello.tgz');
    expect((await cli(['pack', 'export', examplePack, '-o', out])).code).toBe(0);
    const repo = `oci://${registry.host}/packs/independent:v1`;
    const pushed = await cli(['store', 'push', examplePack, repo, '--plain-http'], { env: env() });
    expect(pushed.code).toBe(0);
    const manifestResponse = await fetch(`${registry.url}/v2/packs/independent/manifests/v1`, {
      headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
    });
    expect(manifestResponse.status).toBe(200);
    const manifest = (await manifestResponse.json()) as {
      artifactType: string;
      layers: { digest: string; mediaType: string }[];
    };
    expect(manifest.artifactType).toBe('application/vnd.packwarden.pack.v1');
    expect(manifest.layers).toHaveLength(1);
    const blob = await fetch(
      `${registry.url}/v2/packs/independent/blobs/${manifest.layers[0]!.digest}`,
    );
    expect(blob.status).toBe(200);
    expect(Buffer.from(await blob.arrayBuffer()).equals(readFileSync(out))).toBe(true);
  }, 30_000);

  test('annotations that lie about the pack digest: refused (exit 1), nothing installed', async () => {
    const exported = await exportPack(examplePack);
    const ref = `oci://${registry.host}/packs/liar:${exported.version}`;
    await pushPackArtifact(
      exported.archive,
      { name: exported.slug, version: exported.version, digest: 'a'.repeat(64) },
      ref,
      { plainHttp: true, env: { HOME: '/nonexistent-home' } },
    );
    const to = join(tempDir(), 'liar');
    const result = await cli(['pack', 'install', ref, '--to', to, '--plain-http', '--json'], {
      env: env(),
    });
    expect(result.code).toBe(1);
    expect(result.stdout + result.stderr).toContain('ERR_PACK_DIGEST_MISMATCH');
    expect(existsSync(to)).toBe(false);
  }, 30_000);

  test('--plain-http to a registry off loopback: exit 2, ERR_OCI_PLAIN_HTTP_REFUSED', async () => {
    const result = await cli(
      ['store', 'info', 'oci://registry.example.com/packs/hello:1.0.0', '--plain-http', '--json'],
      { env: env() },
    );
    expect(result.code).toBe(2);
    expect(result.stdout + result.stderr).toContain('ERR_OCI_PLAIN_HTTP_REFUSED');
  });
});

describe('lockfile: --lock records, --frozen refuses what changed', () => {
  let registry: RunningRegistry;
  beforeAll(async () => {
    registry = await startRegistry();
  }, 30_000);
  afterAll(async () => {
    await registry?.stop();
  });

  test('a moved tag on the registry: frozen install refused (exit 1), installed pack unchanged', async () => {
    const env = { HOME: '/nonexistent-home', DOCKER_CONFIG: tempDir(), PACKWARDEN_HOME: tempDir() };
    const repo = `oci://${registry.host}/packs/moving`;
    const pack = copyOfExample();
    expect((await cli(['store', 'push', pack, repo, '--plain-http'], { env })).code).toBe(0);
    const lockFile = join(tempDir(), 'packwarden.lock');
    const first = await cli(['store', 'install', repo, '--plain-http', '--lock', lockFile], {
      env,
    });
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const lock = JSON.parse(readFileSync(lockFile, 'utf8')) as {
      lockfileVersion: number;
      packs: Record<string, { resolved: string; packDigest: string; source: string }>;
    };
    expect(lock.lockfileVersion).toBe(1);
    const [key] = Object.keys(lock.packs);
    const entry = lock.packs[key!]!;
    expect(entry.source).toBe(repo);
    expect(entry.resolved).toMatch(/@sha256:[0-9a-f]{64}$/);
    const installedDir = first.stdout.match(/into (\S+)/)![1]!;
    const before = readFileSync(join(installedDir, 'AGENTS.md'));

    // The same version, other content, pushed over the same tag (tags are mutable by default).
    writeFileSync(join(pack, 'AGENTS.md'), 'changed after the lock was written\n');
    expect((await cli(['store', 'push', pack, repo, '--plain-http'], { env })).code).toBe(0);

    const frozen = await cli(
      ['store', 'install', '--frozen', '--lock', lockFile, '--plain-http', '--force', '--json'],
      { env },
    );
    expect(frozen.code).toBe(1);
    const output = frozen.stdout + frozen.stderr;
    expect(output).toContain('ERR_LOCK_MISMATCH');
    expect(output).toContain(key!);
    expect(output).toContain(entry.resolved.split('@')[1]!);
    expect(readFileSync(join(installedDir, 'AGENTS.md'))).toEqual(before);
    expect(readFileSync(lockFile, 'utf8')).toContain(entry.resolved);
  }, 60_000);

  test('a lock entry edited to pin another artifact of its repository: frozen install refused, nothing installed', async () => {
    const env = { HOME: '/nonexistent-home', DOCKER_CONFIG: tempDir(), PACKWARDEN_HOME: tempDir() };
    const repo = `oci://${registry.host}/packs/swap`;
    const other = copyOfExample();
    const manifest = join(other, 'agent.yaml');
    writeFileSync(
      manifest,
      readFileSync(manifest, 'utf8')
        .replace('name: hello-pack', 'name: other-pack')
        .replace('version: 0.1.0', 'version: 9.9.9'),
    );
    expect((await cli(['store', 'push', other, repo, '--plain-http'], { env })).code).toBe(0);
    const recorded = join(tempDir(), 'recorded.lock');
    const pulled = await cli(
      ['store', 'install', `${repo}:9.9.9`, '--plain-http', '--lock', recorded],
      {
        env,
      },
    );
    expect(pulled.code, pulled.stderr).toBe(0);
    const otherEntry = (
      JSON.parse(readFileSync(recorded, 'utf8')) as { packs: Record<string, object> }
    ).packs['pack/other-pack']!;

    // The pull request's lock: hello-pack at a version the repository has no tag for (so no
    // moved-tag check applies), with every recorded value taken from other-pack.
    const lockFile = join(tempDir(), 'packwarden.lock');
    const forged = (entry: object) =>
      writeFileSync(
        lockFile,
        JSON.stringify({
          lockfileVersion: 1,
          packs: { 'pack/hello-pack': { ...entry, version: '7.7.7' } },
        }),
      );
    forged(otherEntry);
    const home = tempDir();
    const frozen = await cli(
      ['store', 'install', '--frozen', '--lock', lockFile, '--plain-http', '--json'],
      { env: { ...env, PACKWARDEN_HOME: home } },
    );
    expect(frozen.code).toBe(1);
    expect(frozen.stdout + frozen.stderr).toContain('ERR_LOCK_MISMATCH');
    expect(frozen.stdout + frozen.stderr).toContain('other-pack');
    expect(readdirSync(home)).toEqual([]);

    // A resolved manifest in another repository than the entry's source is no lock entry at all.
    forged({ ...otherEntry, source: `oci://${registry.host}/packs/elsewhere` });
    const crossed = await cli(
      ['store', 'install', '--frozen', '--lock', lockFile, '--plain-http', '--json'],
      { env: { ...env, PACKWARDEN_HOME: home } },
    );
    expect(crossed.code).not.toBe(0);
    expect(crossed.stdout + crossed.stderr).toContain('ERR_LOCKFILE_INVALID');
    expect(readdirSync(home)).toEqual([]);
  }, 60_000);

  test('a static store re-publishing a version: frozen install refused, installed pack unchanged', async () => {
    const env = { HOME: '/nonexistent-home', PACKWARDEN_HOME: tempDir() };
    const packs = tempDir();
    const pack = join(packs, 'hello-pack');
    cpSync(examplePack, pack, { recursive: true });
    const storeDir = join(tempDir(), 'store');
    expect((await cli(['store', 'build', packs, '--out', storeDir], { env })).code).toBe(0);
    const lockFile = join(tempDir(), 'packwarden.lock');
    const name = 'hello-pack';
    const first = await cli(
      ['store', 'install', `pack/${name}`, '--store', storeDir, '--lock', lockFile],
      { env },
    );
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const installedDir = first.stdout.match(/into (\S+)/)![1]!;
    const before = readFileSync(join(installedDir, 'AGENTS.md'));
    const locked = JSON.parse(readFileSync(lockFile, 'utf8')) as {
      packs: Record<string, { archiveSha256: string; source: string }>;
    };
    expect(Object.keys(locked.packs)).toEqual([`pack/${name}`]);

    // Nothing changed yet: the frozen install installs the locked version again.
    const unchanged = await cli(['store', 'install', '--frozen', '--lock', lockFile, '--force'], {
      env,
    });
    expect(unchanged.stderr).toBe('');
    expect(unchanged.code).toBe(0);
    expect(unchanged.stdout).toContain(`checked against ${lockFile}`);

    writeFileSync(join(pack, 'AGENTS.md'), 're-published with other bytes\n');
    rmSync(storeDir, { recursive: true, force: true });
    expect((await cli(['store', 'build', packs, '--out', storeDir], { env })).code).toBe(0);

    const frozen = await cli(['store', 'install', '--frozen', '--lock', lockFile, '--force'], {
      env,
    });
    expect(frozen.code).toBe(1);
    expect(frozen.stderr).toContain(`pack/${name}`);
    expect(frozen.stderr).toContain(locked.packs[`pack/${name}`]!.archiveSha256);
    expect(readFileSync(join(installedDir, 'AGENTS.md'))).toEqual(before);
  }, 60_000);
});

describe('pack verify --installed --lock', () => {
  /** The example pack exported, installed with a lock; `verify` runs `pack verify --installed`. */
  async function installedWithLock() {
    const work = tempDir();
    const env = { HOME: '/nonexistent-home', PACKWARDEN_HOME: tempDir() };
    const archive = join(tempDir(), 'hello.tgz');
    expect((await cli(['pack', 'export', examplePack, '-o', archive], { env })).code).toBe(0);
    const lockFile = join(tempDir(), 'packwarden.lock');
    const installed = await cli(['store', 'install', archive, '--lock', lockFile], {
      env,
      cwd: work,
    });
    expect(installed.stderr).toBe('');
    expect(installed.code).toBe(0);
    return {
      dir: installed.stdout.match(/into (\S+)/)![1]!,
      verify: (...args: string[]) =>
        cli(['pack', 'verify', '--installed', ...args], { env, cwd: work }),
      lockFile,
      work,
    };
  }

  test('an edited file of an installed pack is reported as drift (exit 1)', async () => {
    const { dir, verify, lockFile } = await installedWithLock();
    const clean = await verify('--lock', lockFile);
    expect(clean.stdout).toContain('ok         pack/hello-pack');
    expect(clean.code).toBe(0);

    writeFileSync(join(dir, 'AGENTS.md'), 'edited after install\n');
    const drift = await verify('--lock', lockFile, '--json');
    expect(drift.code).toBe(1);
    const report = JSON.parse(drift.stdout) as {
      ok: boolean;
      packs: { key: string; status: string }[];
    };
    expect(report.ok).toBe(false);
    expect(report.packs).toContainEqual(
      expect.objectContaining({ key: 'pack/hello-pack', status: 'drifted' }),
    );

    const noLock = await verify();
    expect(noLock.code).toBe(2);
  }, 60_000);

  test('a workspace pack that is a symlink is checked too: the name runs it', async () => {
    // listInstalledPacks listed only real folders, while resolvePack follows a symlink in
    // .packwarden/agents (a pull request can add one): the locked home install was checked,
    // found unchanged, and the linked pack ran under its name.
    const { verify, lockFile, work } = await installedWithLock();
    const other = copyOfExample();
    writeFileSync(join(other, 'AGENTS.md'), 'not what the lock records\n');
    mkdirSync(join(work, '.packwarden', 'agents'), { recursive: true });
    symlinkSync(other, join(work, '.packwarden', 'agents', 'hello-pack'));
    const drift = await verify('--lock', lockFile, '--json');
    const report = JSON.parse(drift.stdout) as {
      packs: { key: string; status: string; dir: string }[];
    };
    expect(report.packs).toContainEqual(
      expect.objectContaining({
        key: 'pack/hello-pack',
        status: 'drifted',
        dir: join(work, '.packwarden', 'agents', 'hello-pack'),
      }),
    );
    expect(drift.code).toBe(1);
  }, 60_000);

  test('a file added in a root folder named pack.sig is drift too', async () => {
    // The digest walk skipped a root folder named pack.sig with everything in it, where SPEC.md
    // leaves out only the root pack.sig itself: files hidden there passed this check.
    const { dir, verify, lockFile } = await installedWithLock();
    rmSync(join(dir, 'pack.sig'), { force: true });
    mkdirSync(join(dir, 'pack.sig'));
    writeFileSync(join(dir, 'pack.sig', 'hook.js'), 'process.exit(0);\n');
    const drift = await verify('--lock', lockFile);
    expect(drift.stdout).toContain('drifted');
    expect(drift.code).toBe(1);
  }, 60_000);
});
