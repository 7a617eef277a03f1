import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanTemps, cli, tempDir } from './helpers.js';
import { baseEnv, packwarden } from './fixtures/sandbox.js';

afterEach(cleanTemps);

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

/** A custom engine (Custom Engine V2) that answers with a fixed sentence and the folder it runs from. */
function writeEngine(dir: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'engine.manifest.json'),
    JSON.stringify({ version: 2, id: 'echo', entry: './engine.mjs', engineExport: 'Engine' }),
  );
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'echo', version: '1.0.0' }));
  writeFileSync(
    join(dir, 'engine.mjs'),
    'export class Engine { async run(turn) { await turn.emitter.text(`echo engine at ${new URL(".", import.meta.url).pathname}`); } }\n',
  );
  return dir;
}

async function keygen(dir: string, kid = 'release'): Promise<{ key: string; keys: string }> {
  const key = join(dir, `${kid}.pem`);
  const result = await cli(['pack', 'keygen', '--kid', kid, '-o', key]);
  expect(result.code, result.stderr).toBe(0);
  return { key, keys: join(dir, `${kid}.keys.json`) };
}

/**
 * A replay of an AgentHippo-style store on 127.0.0.1: `store-index.json` with the row the
 * store's index builder writes for an engine, and the GitHub API answering the tag
 * `engines/echo/v1.0.0` with a repository tarball (one top folder, the engine in engines/echo/).
 */
async function agentHippoStore(engineDir: string): Promise<Record<string, string>> {
  const repo = tempDir();
  const top = join(repo, 'acme-store-1234567');
  mkdirSync(join(top, 'engines'), { recursive: true });
  spawnSync('cp', ['-r', engineDir, join(top, 'engines', 'echo')]);
  const tarball = join(repo, 'repo.tgz');
  const tar = spawnSync('tar', [
    '--format=ustar',
    '--owner=0',
    '--group=0',
    '-czf',
    tarball,
    '-C',
    repo,
    'acme-store-1234567',
  ]);
  expect(tar.status, tar.stderr?.toString()).toBe(0);
  const body = readFileSync(tarball);
  const index = {
    version: 1,
    artifacts: [
      { id: 'engine/echo', type: 'engine', slug: 'echo', tags: ['engine'], latestVersion: '1.0.0' },
    ],
  };
  const server = createServer((request, response) => {
    if (request.url === '/store-index.json') response.end(JSON.stringify(index));
    else if (request.url === '/repos/acme/store/tarball/engines/echo/v1.0.0')
      response.writeHead(200, { 'content-type': 'application/x-gzip' }).end(body);
    else response.writeHead(404).end('{"message":"Not Found"}');
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    PACKWARDEN_STORE_URL: `${origin}/store-index.json`,
    PACKWARDEN_GITHUB_API_URL: origin,
    PACKWARDEN_STORE_REPO: 'acme/store',
  };
}

function writePack(dir: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'agent.yaml'),
    'apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: uses-echo, version: 1.0.0}\nspec:\n  engine: echo\n',
  );
  return dir;
}

describe('packwarden engine sign / verify', () => {
  test('sign writes engine.sig; verify exits 0, 3 unsigned, 4 untrusted key, 1 changed', async () => {
    const work = tempDir();
    const { key, keys } = await keygen(work);
    const engine = writeEngine(join(work, 'echo'));
    const unsigned = await cli(['engine', 'verify', engine, '--keys', keys]);
    expect(unsigned.code, unsigned.stderr).toBe(3);

    const signed = await cli([
      'engine',
      'sign',
      engine,
      '--key',
      key,
      '--kid',
      'release',
      '--json',
    ]);
    expect(signed.code, signed.stderr).toBe(0);
    expect(JSON.parse(signed.stdout)).toMatchObject({
      engine: { id: 'echo', version: '1.0.0' },
      kid: 'release',
      file: join(engine, 'engine.sig'),
    });
    const verified = await cli(['engine', 'verify', engine, '--keys', keys, '--json']);
    expect(verified.code, verified.stderr).toBe(0);
    expect(JSON.parse(verified.stdout).result).toMatchObject({ kind: 'verified', engine: 'echo' });

    const other = await keygen(tempDir(), 'other');
    expect((await cli(['engine', 'verify', engine, '--keys', other.keys])).code).toBe(4);
    writeFileSync(join(engine, 'engine.mjs'), 'export class Engine {}\n');
    const changed = await cli(['engine', 'verify', engine, '--keys', keys]);
    expect(changed.code).toBe(1);
    expect(changed.stderr).toContain('digest-mismatch');
  });

  test('an engine.sig copied in as a pack.sig is refused by pack verify (exit 1, payload)', async () => {
    const work = tempDir();
    const { key, keys } = await keygen(work);
    const engine = writeEngine(join(work, 'echo'));
    expect((await cli(['engine', 'sign', engine, '--key', key, '--kid', 'release'])).code).toBe(0);
    const pack = writePack(join(work, 'pack'));
    writeFileSync(join(pack, 'pack.sig'), readFileSync(join(engine, 'engine.sig')));
    const asPack = await cli(['pack', 'verify', pack, '--keys', keys]);
    expect(asPack.code).toBe(1);
    expect(`${asPack.stdout}${asPack.stderr}`).toContain('payload');
  });
});

describe('store install engine/<id>, then run a pack that uses it (AgentHippo-style store on 127.0.0.1)', () => {
  test('signed: installed with --require-signed, run with --require-signed-pack loads the verified copy', async () => {
    const work = tempDir();
    const { key, keys } = await keygen(work);
    const engine = writeEngine(join(work, 'echo'));
    expect((await cli(['engine', 'sign', engine, '--key', key, '--kid', 'release'])).code).toBe(0);
    const pack = writePack(join(work, 'pack'));
    expect((await cli(['pack', 'sign', pack, '--key', key, '--kid', 'release'])).code).toBe(0);

    // Installed in the user's own PACKWARDEN_HOME, as a user would; `run` hands that home to
    // the sandbox (--engine-home), which loads the engine from a verified copy in its state.
    const home = realpathSync(tempDir());
    const state = realpathSync(tempDir());
    const storeEnv = await agentHippoStore(engine);
    const installed = await cli(
      ['store', 'install', 'engine/echo', '--require-signed', '--keys', keys, '--json'],
      { env: { ...storeEnv, PACKWARDEN_HOME: home } },
    );
    expect(installed.code, installed.stderr).toBe(0);
    expect(JSON.parse(installed.stdout).installed).toMatchObject({
      dir: join(home, 'engines', 'echo', '1.0.0'),
      verification: { kind: 'verified' },
    });

    const run = packwarden(
      ['run', pack, 'hi', '--state-dir', state, '--require-signed-pack', '--keys', keys],
      { ...baseEnv(), PACKWARDEN_HOME: home },
    );
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain(`echo engine at ${join(state, 'verified-engines', 'echo')}/`);
  });

  test('pack verify --installed checks a locked engine where the engine loader finds it', async () => {
    // Engines in a lock were reported `missing` however they were installed, and never checked.
    const work = tempDir();
    const { key, keys } = await keygen(work);
    const engine = writeEngine(join(work, 'echo'));
    expect((await cli(['engine', 'sign', engine, '--key', key, '--kid', 'release'])).code).toBe(0);
    const home = realpathSync(tempDir());
    const env = { ...(await agentHippoStore(engine)), PACKWARDEN_HOME: home };
    const lockFile = join(work, 'packwarden.lock');
    const installed = await cli(
      ['store', 'install', 'engine/echo', '--require-signed', '--keys', keys, '--lock', lockFile],
      { env, cwd: work },
    );
    expect(installed.code, installed.stderr).toBe(0);
    const verify = async () => {
      const result = await cli(['pack', 'verify', '--installed', '--lock', lockFile, '--json'], {
        env,
        cwd: work,
      });
      const report = JSON.parse(result.stdout) as { packs: { key: string; status: string }[] };
      return { code: result.code, rows: report.packs };
    };
    const dir = join(home, 'engines', 'echo', '1.0.0');
    expect(await verify()).toEqual({
      code: 0,
      rows: [expect.objectContaining({ key: 'engine/echo', status: 'ok', dir })],
    });

    // Its code changed: drift. (engine.sig is left out of the digest, as its install did.)
    const code = readFileSync(join(dir, 'engine.mjs'));
    writeFileSync(join(dir, 'engine.mjs'), 'export class Engine {}\n');
    expect(await verify()).toMatchObject({ code: 1, rows: [{ status: 'drifted' }] });
    writeFileSync(join(dir, 'engine.mjs'), code);
    expect((await verify()).code).toBe(0);

    // An engine placed at engines/echo/ itself is what the loader takes: drift, not ok.
    writeEngine(join(home, 'engines', 'echo'));
    expect(await verify()).toMatchObject({
      code: 1,
      rows: [{ status: 'drifted', dir: join(home, 'engines', 'echo') }],
    });
  });

  test('unsigned: installs and runs without signatures; --require-signed refuses it, and so does a signed run', async () => {
    const work = tempDir();
    const { key, keys } = await keygen(work);
    const engine = writeEngine(join(work, 'echo'));
    const pack = writePack(join(work, 'pack'));
    expect((await cli(['pack', 'sign', pack, '--key', key, '--kid', 'release'])).code).toBe(0);
    const state = realpathSync(tempDir());
    const home = realpathSync(tempDir());
    const env = { ...(await agentHippoStore(engine)), PACKWARDEN_HOME: home };

    const refused = await cli(
      ['store', 'install', 'engine/echo', '--require-signed', '--keys', keys],
      { env },
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('has no engine.sig: the engine is not signed');
    // Nothing written: no version folder, no current.txt, no staging folder, the lock released.
    expect(readdirSync(join(home, 'engines', 'echo'))).toEqual([]);

    const installed = await cli(['store', 'install', 'engine/echo'], { env });
    expect(installed.code, installed.stderr).toBe(0);
    const userEnv = { ...baseEnv(), PACKWARDEN_HOME: home };
    const run = packwarden(['run', pack, 'hi', '--state-dir', state], userEnv);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain(`echo engine at ${join(home, 'engines', 'echo', '1.0.0')}/`);

    const signedRun = packwarden(
      ['run', pack, 'hi', '--state-dir', state, '--require-signed-pack', '--keys', keys],
      userEnv,
    );
    expect(signedRun.status).toBe(1);
    expect(signedRun.stderr).toContain(
      `refusing to load the engine installed at ${join(home, 'engines', 'echo', '1.0.0')} (unsigned:`,
    );
    expect(signedRun.stdout).not.toContain('echo engine at');
  });
});
