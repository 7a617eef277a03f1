import {
  cpSync,
  type Dirent,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, normalize } from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { cleanTemps, cli, copyOfExample, tempDir } from './helpers.js';

afterEach(cleanTemps);

/** A plain static file server on 127.0.0.1 for a folder, like any static host. */
async function serve(root: string): Promise<{ server: Server; base: string; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((request, response) => {
    const path = normalize(decodeURIComponent(new URL(request.url ?? '/', 'http://x').pathname));
    hits.push(path);
    const file = join(root, path);
    if (!file.startsWith(root) || !existsSync(file)) return void response.writeHead(404).end();
    response.writeHead(200).end(readFileSync(file));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

interface Fixture {
  storeDir: string;
  keysFile: string;
  originalDigest: string;
}

/** Every file under `root`, as relative paths. */
function filesUnder(root: string): string[] {
  return (readdirSync(root, { recursive: true, withFileTypes: true }) as Dirent[])
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name).slice(root.length + 1))
    .sort();
}

// Built once for the whole describe block: outside the per-test temp dirs cleaned after each test.
async function signedStore(dir: string): Promise<Fixture> {
  const keyFile = join(dir, 'key.pem');
  const key = JSON.parse(
    (await cli(['pack', 'keygen', '--kid', 'store', '-o', keyFile, '--json'])).stdout,
  );
  const keysFile = join(dir, 'keys.json');
  writeFileSync(keysFile, JSON.stringify({ store: key.publicKeyPem }));
  const packs = join(dir, 'packs');
  const pack = copyOfExample();
  expect((await cli(['pack', 'sign', pack, '--key', keyFile, '--kid', 'store'])).code).toBe(0);
  cpSync(pack, join(packs, 'hello-pack'), { recursive: true });
  const storeDir = join(dir, 'store');
  const built = await cli(['store', 'build', packs, '--out', storeDir]);
  expect(built.code, built.stderr).toBe(0);
  expect(built.stdout).toMatch(/hello-pack@0\.1\.0 .* signed/);
  return {
    storeDir,
    keysFile,
    originalDigest: (await cli(['pack', 'digest', pack])).stdout.slice(0, 64),
  };
}

describe('store build | list | search | info | install', () => {
  let fixture: Fixture;
  let http: Awaited<ReturnType<typeof serve>>;
  let fixtureDir: string;
  beforeAll(async () => {
    fixtureDir = mkdtempSync(join(tmpdir(), 'pw-cli-store-'));
    fixture = await signedStore(fixtureDir);
    http = await serve(fixture.storeDir);
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => http.server.close(() => resolve()));
    rmSync(fixtureDir, { recursive: true, force: true });
  });

  test('store build writes index.json and one archive per pack version, the same bytes every time', async () => {
    const files = filesUnder(fixture.storeDir);
    expect(files).toContain('index.json');
    expect(files.filter((file) => file.endsWith('.tar.gz'))).toHaveLength(1);
    const again = join(tempDir(), 'again');
    const packs = join(fixture.storeDir, '..', 'packs');
    expect((await cli(['store', 'build', packs, '--out', again])).code).toBe(0);
    expect(filesUnder(again)).toEqual(files);
    for (const name of files) {
      expect(
        readFileSync(join(again, name)).equals(readFileSync(join(fixture.storeDir, name))),
        name,
      ).toBe(true);
    }
  });

  test('list, search and info over http on loopback', async () => {
    const url = `${http.base}/index.json`;
    const list = await cli(['store', 'list', '--store', url]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^pack\/hello-pack\s+0\.1\.0/m);
    expect((await cli(['store', 'search', 'greets', '--store', url])).stdout).toContain(
      'pack/hello-pack',
    );
    expect((await cli(['store', 'search', 'no-such-thing', '--store', url])).stdout).toContain(
      'Nothing matches',
    );
    const info = JSON.parse(
      (await cli(['store', 'info', 'pack/hello-pack', '--store', url, '--json'])).stdout,
    );
    expect(info.artifact).toMatchObject({
      type: 'pack',
      slug: 'hello-pack',
      latestVersion: '0.1.0',
    });
    expect((await cli(['store', 'info', 'pack/ghost', '--store', url])).code).toBe(1);
    expect((await cli(['store', 'list', '--store', url, '--type', 'packs'])).stdout).toContain(
      'pack/hello-pack',
    );
    expect((await cli(['store', 'list', '--store', url, '--type', 'skills'])).stdout).not.toContain(
      'hello-pack',
    );
    expect((await cli(['store', 'list', '--store', url, '--type', 'bogus'])).code).toBe(2);
    expect((await cli(['store', 'info', 'nonsense', '--store', url])).code).toBe(1);
  });

  test('install with signatures required: verified, then found by name with the same digest', async () => {
    const home = tempDir();
    const env = { PACKWARDEN_HOME: home };
    const result = await cli(
      [
        'store',
        'install',
        'pack/hello-pack',
        '--store',
        `${http.base}/index.json`,
        '--require-signed',
        '--keys',
        fixture.keysFile,
      ],
      { env },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /installed hello-pack@0\.1\.0 into .*agents\/hello-pack\/0\.1\.0/,
    );
    expect(result.stdout).toContain('signature verified');
    expect(readFileSync(join(home, 'agents', 'hello-pack', 'current.txt'), 'utf8').trim()).toBe(
      '0.1.0',
    );
    expect(
      (await cli(['pack', 'digest', 'hello-pack'], { env, cwd: tempDir() })).stdout.slice(0, 64),
    ).toBe(fixture.originalDigest);
    expect(
      (
        await cli(['pack', 'verify', 'hello-pack', '--keys', fixture.keysFile], {
          env,
          cwd: tempDir(),
        })
      ).code,
    ).toBe(0);
    // The environment's "yes" means the same as --require-signed, for the CLI and the library alike.
    const viaEnv = await cli(
      [
        'store',
        'install',
        'pack/hello-pack',
        '--store',
        `${http.base}/index.json`,
        '--keys',
        fixture.keysFile,
      ],
      { env: { PACKWARDEN_HOME: tempDir(), PACKWARDEN_REQUIRE_SIGNED_PACK: 'yes' } },
    );
    expect(viaEnv.code, viaEnv.stderr).toBe(0);
    expect(viaEnv.stdout).toContain('signature verified');
    // Again without --force: refused, the installed copy untouched.
    const again = await cli(
      ['store', 'install', 'pack/hello-pack', '--store', `${http.base}/index.json`],
      { env },
    );
    expect(again.code).toBe(1);
  });

  test('signatures required but the signer is not trusted: refused, nothing installed', async () => {
    const home = tempDir();
    const stranger = join(tempDir(), 'keys.json');
    writeFileSync(
      stranger,
      JSON.stringify({
        store: JSON.parse(
          (await cli(['pack', 'keygen', '-o', join(tempDir(), 'k.pem'), '--json'])).stdout,
        ).publicKeyPem,
      }),
    );
    const result = await cli(
      [
        'store',
        'install',
        'pack/hello-pack',
        '--store',
        `${http.base}/index.json`,
        '--keys',
        stranger,
      ],
      { env: { PACKWARDEN_HOME: home, PACKWARDEN_REQUIRE_SIGNED_PACK: '1' } },
    );
    expect(result.code).toBe(1);
    expect(existsSync(join(home, 'agents', 'hello-pack', '0.1.0'))).toBe(false);
  });

  test('pack install --to extracts the pack flat; a folder store and file:// work too', async () => {
    const to = join(tempDir(), 'hello');
    const result = await cli(
      ['pack', 'install', 'hello-pack', '--to', to, '--store', fixture.storeDir],
      { env: { PACKWARDEN_HOME: tempDir() } },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(existsSync(join(to, 'agent.yaml'))).toBe(true);
    expect((await cli(['pack', 'digest', to])).stdout.slice(0, 64)).toBe(fixture.originalDigest);
    const viaFileUrl = await cli([
      'store',
      'list',
      '--store',
      `file://${fixture.storeDir}/index.json`,
    ]);
    expect(viaFileUrl.stdout).toContain('pack/hello-pack');
    expect((await cli(['pack', 'install', 'hello-pack', '--store', fixture.storeDir])).code).toBe(
      2,
    );
  });

  test('a progress bar goes to stderr on a terminal, and nowhere otherwise', async () => {
    const bin = new URL('../dist/bin.cjs', import.meta.url).pathname;
    const args = ['store', 'install', 'pack/hello-pack', '--store', fixture.storeDir];
    // python3's pty module gives the CLI a real terminal; its output comes back on our pipe.
    const onTty = spawnSync(
      'python3',
      [
        '-c',
        'import pty, sys; sys.exit(pty.spawn(sys.argv[1:]) >> 8)',
        process.execPath,
        bin,
        ...args,
      ],
      { encoding: 'utf8', env: { ...process.env, PACKWARDEN_HOME: tempDir() } },
    );
    expect(onTty.status, onTty.stdout).toBe(0);
    expect(onTty.stdout).toContain('\u001b[2K');
    expect(onTty.stdout).toMatch(/(download|extract)/);
    expect(onTty.stdout).toContain('installed hello-pack@0.1.0');
    const piped = spawnSync(process.execPath, [bin, ...args], {
      encoding: 'utf8',
      env: { ...process.env, PACKWARDEN_HOME: tempDir() },
    });
    expect(piped.status).toBe(0);
    expect(piped.stderr).not.toContain('\u001b[2K');
  });
});

describe('store install from a lying store, with the built CLI (issue 9.4)', () => {
  let fixtureDir: string;
  let archive: Buffer;
  let index: Buffer;
  beforeAll(async () => {
    fixtureDir = mkdtempSync(join(tmpdir(), 'pw-cli-lying-'));
    const packs = join(fixtureDir, 'packs');
    cpSync(copyOfExample(), join(packs, 'hello-pack'), { recursive: true });
    const storeDir = join(fixtureDir, 'store');
    expect((await cli(['store', 'build', packs, '--out', storeDir])).code).toBe(0);
    index = readFileSync(join(storeDir, 'index.json'));
    const entry = JSON.parse(index.toString()).artifacts[0].versions[0];
    archive = readFileSync(join(storeDir, entry.archive));
  });
  afterAll(() => rmSync(fixtureDir, { recursive: true, force: true }));

  const lies: [string, string, (response: ServerResponse) => void][] = [
    [
      'a body longer than the size, without Content-Length',
      'ERR_DOWNLOAD_SIZE_MISMATCH',
      (response) => {
        response.write(archive);
        response.end(Buffer.alloc(256 * 1024, 1));
      },
    ],
    [
      'Content-Encoding: gzip',
      'ERR_DOWNLOAD_CONTENT_ENCODING',
      (response) => {
        response.setHeader('content-encoding', 'gzip');
        response.end(gzipSync(archive));
      },
    ],
  ];
  for (const [name, code, lie] of lies) {
    test(`${name}: exit 1 with ${code}, no lock, staging or cache file left`, async () => {
      const server = createServer((request, response) =>
        request.url === '/index.json' ? response.end(index) : lie(response),
      );
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/index.json`;
        const home = tempDir();
        const bin = new URL('../dist/bin.cjs', import.meta.url).pathname;
        const env = { ...process.env, PACKWARDEN_HOME: home };
        for (const json of [false, true]) {
          const result = await new Promise<{
            status: number | null;
            stdout: string;
            stderr: string;
          }>((resolve) => {
            const child = spawn(
              process.execPath,
              [
                bin,
                'store',
                'install',
                'pack/hello-pack',
                '--store',
                url,
                ...(json ? ['--json'] : []),
              ],
              { env },
            );
            let stdout = '';
            let stderr = '';
            child.stdout.on('data', (c: Buffer) => (stdout += c));
            child.stderr.on('data', (c: Buffer) => (stderr += c));
            child.on('close', (status) => resolve({ status, stdout, stderr }));
          });
          expect(result.status, result.stderr).toBe(1);
          expect(result.stderr).not.toMatch(/Unhandled|node:events|at .*\.js:\d+/);
          if (json) expect(JSON.parse(result.stdout).error.code).toBe(code);
        }
        expect(readdirSync(join(home, 'agents', 'hello-pack'))).toEqual([]);
        const cache = join(home, 'cache', 'store', 'archives');
        expect(existsSync(cache) ? readdirSync(cache) : []).toEqual([]);
      } finally {
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    });
  }
});

describe('store install refuses a downgrade unless --allow-downgrade (issue 9 W5)', () => {
  test('a store whose latest is older than the installed version: exit 1, current.txt kept; --allow-downgrade installs it', async () => {
    const root = tempDir();
    const storeFor = async (version: string) => {
      const pack = join(root, `packs-${version}`, 'hello-pack');
      cpSync(copyOfExample(), pack, { recursive: true });
      const manifest = join(pack, 'agent.yaml');
      writeFileSync(
        manifest,
        readFileSync(manifest, 'utf8').replace(/^ {2}version: .*$/m, `  version: ${version}`),
      );
      rmSync(join(pack, 'pack.sig'), { force: true });
      const out = join(root, `store-${version}`);
      const built = await cli(['store', 'build', join(root, `packs-${version}`), '--out', out]);
      expect(built.code, built.stderr).toBe(0);
      return out;
    };
    const newer = await storeFor('0.2.0');
    const older = await storeFor('0.1.5');
    const env = { PACKWARDEN_HOME: join(root, 'home') };
    const current = join(root, 'home', 'agents', 'hello-pack', 'current.txt');
    expect(
      (await cli(['store', 'install', 'pack/hello-pack', '--store', newer], { env })).code,
    ).toBe(0);
    const refused = await cli(['store', 'install', 'pack/hello-pack', '--store', older, '--json'], {
      env,
    });
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout).error.code).toBe('ERR_DOWNGRADE_REFUSED');
    expect(JSON.parse(refused.stdout).error.message).toContain('--allow-downgrade');
    expect(readFileSync(current, 'utf8')).toBe('0.2.0\n');
    const allowed = await cli(
      ['store', 'install', 'pack/hello-pack', '--store', older, '--allow-downgrade'],
      { env },
    );
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(readFileSync(current, 'utf8')).toBe('0.1.5\n');
  });
});

describe('store install: trust flags and the signed-pack variable are never ignored (issue 9 W11, W8)', () => {
  let fixture: Fixture;
  let fixtureDir: string;
  beforeAll(async () => {
    fixtureDir = mkdtempSync(join(tmpdir(), 'pw-cli-store-trust-'));
    fixture = await signedStore(fixtureDir);
  });
  afterAll(() => rmSync(fixtureDir, { recursive: true, force: true }));

  test('--keys without --require-signed: a signature by another key is refused (exit 1), nothing installed', async () => {
    const home = tempDir();
    const stranger = join(tempDir(), 'keys.json');
    writeFileSync(
      stranger,
      JSON.stringify({
        store: JSON.parse(
          (await cli(['pack', 'keygen', '-o', join(tempDir(), 'k.pem'), '--json'])).stdout,
        ).publicKeyPem,
      }),
    );
    const args = ['store', 'install', 'pack/hello-pack', '--store', fixture.storeDir];
    const refused = await cli([...args, '--keys', stranger, '--json'], {
      env: { PACKWARDEN_HOME: home },
    });
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout).error.code).toBe('ERR_SIGNATURE_REFUSED');
    expect(readdirSync(join(home, 'agents', 'hello-pack'))).toEqual([]);

    const verified = await cli([...args, '--keys', fixture.keysFile], {
      env: { PACKWARDEN_HOME: home },
    });
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toContain('signature verified');

    const unchecked = await cli(args, { env: { PACKWARDEN_HOME: tempDir() } });
    expect(unchecked.code, unchecked.stderr).toBe(0);
    expect(unchecked.stdout).toContain('signature not checked (no trust root given)');
  });

  test('PACKWARDEN_REQUIRE_SIGNED_PACK=required (or y, enabled) is a usage error (exit 2), never "off"', async () => {
    for (const value of ['required', 'y', 'enabled']) {
      const home = tempDir();
      const result = await cli(
        ['store', 'install', 'pack/hello-pack', '--store', fixture.storeDir, '--json'],
        { env: { PACKWARDEN_HOME: home, PACKWARDEN_REQUIRE_SIGNED_PACK: value } },
      );
      expect(result.code, result.stderr).toBe(2);
      expect(JSON.parse(result.stdout).error.message).toContain('PACKWARDEN_REQUIRE_SIGNED_PACK');
      expect(readdirSync(home)).toEqual([]);
    }
  });
});

describe('store list / info neutralise control characters from store metadata (issue 9 W4)', () => {
  test('OSC 52, screen clears and bidi overrides are shown escaped; --json carries them unchanged', async () => {
    const dir = tempDir();
    const hostile = 'Reviews\u001b]52;c;cm0gLXJmIH4=\u0007 code\u001b[2J\u001b[H\u202e';
    writeFileSync(
      join(dir, 'index.json'),
      JSON.stringify({
        format: 'packwarden-store/1',
        artifacts: [
          {
            type: 'pack',
            slug: 'reviewer',
            displayName: `Name\u001b[31m`,
            description: hostile,
            author: 'ACME\u009b2J',
            tags: ['x\u0007'],
            latestVersion: '1.0.0',
            versions: [
              {
                version: '1.0.0',
                archive: 'r.tar.gz',
                size: 1,
                sha256: '0'.repeat(64),
                digest: '0'.repeat(64),
              },
            ],
          },
        ],
      }),
    );
    for (const argv of [
      ['store', 'list', '--store', dir],
      ['store', 'search', 'reviews', '--store', dir],
      ['store', 'info', 'pack/reviewer', '--store', dir],
    ]) {
      const result = await cli(argv);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain('reviewer');
      // eslint-disable-next-line no-control-regex -- asserting no control character got through
      expect(result.stdout.replace(/\n/g, '')).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
      expect(result.stdout).toContain('\\x1b]52');
    }
    const json = JSON.parse(
      (await cli(['store', 'info', 'pack/reviewer', '--store', dir, '--json'])).stdout,
    );
    expect(json.artifact.description).toBe(hostile);
  });
});

describe('store install / pack install of a local .tgz (issue 12.1)', () => {
  let fixture: Fixture;
  let fixtureDir: string;
  let archive: Buffer;
  beforeAll(async () => {
    fixtureDir = mkdtempSync(join(tmpdir(), 'pw-cli-store-tgz-'));
    fixture = await signedStore(fixtureDir);
    const index = JSON.parse(readFileSync(join(fixture.storeDir, 'index.json'), 'utf8'));
    archive = readFileSync(join(fixture.storeDir, index.artifacts[0].versions[0].archive));
  });
  afterAll(() => rmSync(fixtureDir, { recursive: true, force: true }));

  test('the archive a store serves installs from a file, signature verified, with every check', async () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, 'hello.tgz'), archive);
    const home = tempDir();
    const env = { PACKWARDEN_HOME: home };
    const installed = await cli(
      ['store', 'install', './hello.tgz', '--require-signed', '--keys', fixture.keysFile],
      { env, cwd },
    );
    expect(installed.code, installed.stderr).toBe(0);
    expect(installed.stdout).toContain('signature verified');
    expect(readFileSync(join(home, 'agents', 'hello-pack', 'current.txt'), 'utf8')).toBe('0.1.0\n');
    expect(
      (await cli(['pack', 'digest', join(home, 'agents', 'hello-pack', '0.1.0')])).stdout,
    ).toContain(fixture.originalDigest);
    const flat = join(cwd, 'flat');
    const packInstall = await cli(['pack', 'install', './hello.tgz', '--to', flat], { env, cwd });
    expect(packInstall.code, packInstall.stderr).toBe(0);
    expect(existsSync(join(flat, 'agent.yaml'))).toBe(true);
    expect(
      (await cli(['store', 'install', './hello.tgz', '--store', cwd], { env, cwd })).code,
    ).toBe(2);
  });

  test('a tampered .tgz is refused against the trust root (exit 1), nothing installed', async () => {
    const cwd = tempDir();
    const tar = gunzipSync(archive);
    const at = tar.indexOf('greets');
    expect(at).toBeGreaterThan(0);
    tar.write('GREETS', at, 'latin1');
    writeFileSync(join(cwd, 'evil.tgz'), gzipSync(tar));
    const home = tempDir();
    const result = await cli(
      ['store', 'install', './evil.tgz', '--keys', fixture.keysFile, '--json'],
      {
        env: { PACKWARDEN_HOME: home },
        cwd,
      },
    );
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout).error.code).toBe('ERR_SIGNATURE_REFUSED');
    expect(readdirSync(join(home, 'agents', 'hello-pack'))).toEqual([]);
  });
});

describe('store install of an archive cut short (issue 16.2)', () => {
  test('exit 1 with ERR_ARCHIVE_TRUNCATED, many times in one process, nothing left', async () => {
    const root = tempDir();
    const packs = join(root, 'packs');
    cpSync(copyOfExample(), join(packs, 'hello-pack'), { recursive: true });
    const storeDir = join(root, 'store');
    expect((await cli(['store', 'build', packs, '--out', storeDir])).code).toBe(0);
    const indexFile = join(storeDir, 'index.json');
    const index = JSON.parse(readFileSync(indexFile, 'utf8'));
    const row = index.artifacts[0].versions[0];
    const archive = readFileSync(join(storeDir, row.archive));
    const home = tempDir();
    for (let i = 1; i <= 8; i++) {
      // The index describes the cut archive exactly: only extraction can tell it is cut.
      const cut = archive.subarray(0, Math.floor((archive.length * i) / 10));
      writeFileSync(join(storeDir, 'cut.tar.gz'), cut);
      row.archive = 'cut.tar.gz';
      row.size = cut.length;
      row.sha256 = createHash('sha256').update(cut).digest('hex');
      writeFileSync(indexFile, JSON.stringify(index));
      const result = await cli(
        ['store', 'install', 'pack/hello-pack', '--store', storeDir, '--json'],
        {
          env: { PACKWARDEN_HOME: home },
        },
      );
      expect(result.code, result.stderr).toBe(1);
      expect(JSON.parse(result.stdout).error.code).toBe('ERR_ARCHIVE_TRUNCATED');
      expect(readdirSync(join(home, 'agents', 'hello-pack'))).toEqual([]);
    }
  });
});
