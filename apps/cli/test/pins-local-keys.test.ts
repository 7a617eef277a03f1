import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { cleanTemps, cli, copyOfExample, repoRoot, tempDir } from './helpers.js';

afterEach(cleanTemps);

const bin = join(repoRoot, 'apps', 'cli', 'dist', 'bin.cjs');
const script = join(repoRoot, 'action', 'verify-packs.sh');

interface Key {
  kid: string;
  keyFile: string;
  publicKeyPem: string;
  publicJwk: Record<string, unknown>;
  thumbprint: string;
}

async function keygen(kid: string): Promise<Key> {
  const keyFile = join(tempDir(), `${kid}.pem`);
  const result = await cli(['pack', 'keygen', '--kid', kid, '-o', keyFile, '--json']);
  expect(result.code, result.stderr).toBe(0);
  const doc = JSON.parse(result.stdout);
  return { kid, keyFile, ...doc };
}

async function signedBy(key: Key): Promise<string> {
  const pack = copyOfExample();
  const signed = await cli(['pack', 'sign', pack, '--key', key.keyFile, '--kid', key.kid]);
  expect(signed.code, signed.stderr).toBe(0);
  return pack;
}

/**
 * The release key the verifier pins, and an intruder's key that got into the keys file (a pull
 * request editing a keys file kept in the checkout) or into the environment.
 */
async function scene() {
  const release = await keygen('release');
  const intruder = await keygen('intruder');
  const keysFile = join(tempDir(), 'keys.json');
  writeFileSync(
    keysFile,
    JSON.stringify({ release: release.publicKeyPem, intruder: intruder.publicKeyPem }),
  );
  return { release, intruder, keysFile, forged: await signedBy(intruder) };
}

describe('--pin is never ignored: with local keys it is refused (exit 2)', () => {
  let server: Server;
  let jwksUrl: string;
  let jwks = '{"keys":[]}';
  beforeAll(async () => {
    server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('the same pins over a JWKS refuse the intruder (4); over a keys file they must not pass it (0)', async () => {
    const { release, intruder, keysFile, forged } = await scene();
    jwks = JSON.stringify({ keys: [release.publicJwk, intruder.publicJwk] });
    const overJwks = await cli(
      ['pack', 'verify', forged, '--jwks', jwksUrl, '--pin', release.thumbprint],
      { env: { PACKWARDEN_HOME: tempDir() } },
    );
    expect(overJwks.code, overJwks.stderr).toBe(4);

    const overKeysFile = await cli([
      'pack',
      'verify',
      forged,
      '--keys',
      keysFile,
      '--pin',
      release.thumbprint,
      '--json',
    ]);
    expect(overKeysFile.code, overKeysFile.stdout).toBe(2);
    const document = JSON.parse(overKeysFile.stdout);
    expect(document).toMatchObject({
      error: { code: 'ERR_CLI_TRUST_CONFIG' },
      exitCode: 2,
    });
    expect(document.error.message).toMatch(/--pin applies to a JWKS URL/);
    expect(document).not.toHaveProperty('packs');
    expect(overKeysFile.stderr).toContain('the pins would be ignored');
  });

  test('a signing-keys variable in the environment does not take over pins written for a JWKS', async () => {
    const { release, intruder, forged } = await scene();
    // The operator pins the release key of the fleet's JWKS (PACKWARDEN_PACK_JWKS_URL); the
    // environment also holds inline keys, which trust-root prefers to the JWKS URL.
    for (const variable of ['PACKWARDEN_PACK_SIGNING_KEYS', 'AGENTHIPPO_PACK_SIGNING_KEYS']) {
      const result = await cli(['pack', 'verify', forged, '--pin', release.thumbprint], {
        env: {
          PACKWARDEN_HOME: tempDir(),
          PACKWARDEN_PACK_JWKS_URL: jwksUrl,
          [variable]: JSON.stringify({ intruder: intruder.publicKeyPem }),
        },
      });
      expect(result.code, `${variable}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toContain(variable);
    }
  });

  test('installs, engine verify and trust show refuse the same way; nothing is installed', async () => {
    const { release, keysFile, forged } = await scene();
    const archive = join(tempDir(), 'hello.tgz');
    expect((await cli(['pack', 'export', forged, '-o', archive])).code).toBe(0);
    const to = join(tempDir(), 'agent');
    const pin = ['--keys', keysFile, '--pin', release.thumbprint];
    const install = await cli(['pack', 'install', archive, '--to', to, '--require-signed', ...pin]);
    expect(install.code, install.stderr).toBe(2);
    expect(install.stderr).toContain('--pin applies to a JWKS URL');
    expect(existsSync(join(to, 'agent.yaml'))).toBe(false);

    const home = tempDir();
    const storeInstall = await cli(['store', 'install', archive, ...pin], {
      env: { PACKWARDEN_HOME: home },
    });
    expect(storeInstall.code, storeInstall.stderr).toBe(2);
    expect(existsSync(join(home, 'agents'))).toBe(false);

    const engine = join(tempDir(), 'engine');
    mkdirSync(engine);
    expect((await cli(['engine', 'verify', engine, ...pin])).code).toBe(2);
    const show = await cli(['trust', 'show', ...pin]);
    expect(show.code).toBe(2);
    expect(show.stderr).toContain('--pin applies to a JWKS URL');
  });
});

describe('the GitHub Action with keys-in-checkout and pins as the guard', () => {
  test('a pull request that adds its key to the keys file and signs with it fails the job', async () => {
    const release = await keygen('release');
    const intruder = await keygen('intruder');
    const checkout = tempDir();
    // The pull request under test: its own key added to the keys file, its pack signed with it.
    writeFileSync(
      join(checkout, 'trusted-keys.json'),
      JSON.stringify({ release: release.publicKeyPem, intruder: intruder.publicKeyPem }),
    );
    cpSync(await signedBy(intruder), join(checkout, 'agent-packs', 'evil'), { recursive: true });
    const output = join(checkout, 'github-output');
    writeFileSync(output, '');
    const result = spawnSync('bash', [script], {
      cwd: checkout,
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        HOME: checkout,
        PACKWARDEN_BIN: `${process.execPath} ${bin}`,
        RUNNER_TEMP: tempDir(),
        GITHUB_WORKSPACE: checkout,
        GITHUB_OUTPUT: output,
        INPUT_PACKS_DIR: 'agent-packs',
        INPUT_KEYS: 'trusted-keys.json',
        INPUT_KEYS_IN_CHECKOUT: 'true',
        INPUT_PINS: release.thumbprint,
      },
    });
    expect(result.status, result.stdout + result.stderr).toBe(2);
    expect(result.stdout).toMatch(/^::error title=packwarden%3A ERR_CLI_TRUST_CONFIG::/m);
    expect(readFileSync(output, 'utf8')).not.toContain('verified=1');
  });
});
