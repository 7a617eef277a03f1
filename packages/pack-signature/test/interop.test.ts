import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { loadPackTrustRoot, type PackTrustRoot } from '@packwarden/trust-root';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  describePackRefusal,
  PACK_VERIFICATION_EXIT_CODES,
  readPackSignature,
  verifyPack,
} from '../src/index.js';
import { cleanupTemps, fixture, makeSigner, makeTemp, selectorFor } from './helpers.js';

const KID = 'store-release-2026-08';
const PIN = 'S9FC_5c2n3eZEAD1bQ_46jn24OADyXq0kITicUEUpgs';
const IAT = new Date(1_785_791_143 * 1000);

let server: Server;
let jwksUrl: string;

beforeAll(async () => {
  const body = readFileSync(fixture('agenthippo/jwks.json'));
  server = createServer((request, response) => {
    if (request.url === '/.well-known/jwks.json') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(body);
    } else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await cleanupTemps();
});

/** A copy of the store's joker1 (agent.yaml + pack.sig, as published). */
async function joker1(): Promise<string> {
  const dir = await makeTemp('joker1-');
  copyFileSync(fixture('agenthippo/joker1/agent.yaml'), join(dir, 'agent.yaml'));
  copyFileSync(fixture('agenthippo/joker1/pack.sig'), join(dir, 'pack.sig'));
  return dir;
}

const roots: [string, () => Promise<PackTrustRoot>][] = [
  [
    'the {kid: PEM} keys file',
    () =>
      loadPackTrustRoot({ keysFile: fixture('agenthippo/keys.json'), env: {}, cacheDir: false }),
  ],
  [
    'the JWKS file',
    () =>
      loadPackTrustRoot({ keysFile: fixture('agenthippo/jwks.json'), env: {}, cacheDir: false }),
  ],
  [
    'the JWKS served on loopback, pinned to the published thumbprint',
    () => loadPackTrustRoot({ jwksUrl, pins: [PIN], env: {}, cacheDir: false }),
  ],
  [
    'AGENTHIPPO_PACK_JWKS_URL + AGENTHIPPO_PACK_JWKS_PINS',
    () =>
      loadPackTrustRoot({
        env: { AGENTHIPPO_PACK_JWKS_URL: jwksUrl, AGENTHIPPO_PACK_JWKS_PINS: PIN },
        cacheDir: false,
      }),
  ],
];

describe('AgentHippo joker1@0.1.3', () => {
  for (const [name, load] of roots) {
    it(`a genuine store signature ends in digest-unsupported with ${name}`, async () => {
      const root = await load();
      expect(root.status).toBe('ok');
      const result = await verifyPack(await joker1(), { selectKey: selectorFor(root) });
      expect(result).toEqual({
        kind: 'digest-unsupported',
        pack: 'joker1',
        packVersion: '0.1.3',
        digest: '17e622fee5f497dbaeb01e99a65baa2f7c78fe31c2202f293fc70add30480679',
        iat: IAT,
        kid: KID,
        thumbprint: PIN,
        message: expect.stringContaining('joker1@0.1.3'),
      });
      expect(PACK_VERIFICATION_EXIT_CODES[result.kind]).toBe(7);
      expect(describePackRefusal(result).fix).toContain('pack sign');
    });
  }

  it('its pack.sig passes the strict pre-parser unchanged', async () => {
    expect(await readPackSignature(await joker1())).toEqual({
      kind: 'present',
      token: readFileSync(fixture('agenthippo/joker1/pack.sig'), 'utf8').trimEnd(),
      header: { alg: 'ES256', typ: 'JWT', kid: KID },
      payload: {
        pack: 'joker1',
        packVersion: '0.1.3',
        digest: expect.any(String),
        iat: 1_785_791_143,
      },
    });
  });

  it('one flipped signature byte: invalid / bad-signature', async () => {
    const root = await roots[0]![1]();
    const token = readFileSync(fixture('agenthippo/joker1/pack.sig'), 'utf8').trimEnd();
    const [header, payload, signature] = token.split('.') as [string, string, string];
    for (const index of [0, 31, 32, 63]) {
      const bytes = Buffer.from(signature, 'base64url');
      bytes[index] = (bytes[index] as number) ^ 0x01;
      const dir = await joker1();
      writeFileSync(join(dir, 'pack.sig'), `${header}.${payload}.${bytes.toString('base64url')}\n`);
      expect(await verifyPack(dir, { selectKey: selectorFor(root) })).toMatchObject({
        kind: 'invalid',
        reason: 'bad-signature',
        kid: KID,
      });
    }
  });

  it('the version (or name) edited in agent.yaml: invalid / identity-mismatch', async () => {
    const root = await roots[0]![1]();
    for (const [from, to] of [
      ['version: 0.1.3', 'version: 0.1.4'],
      ['name: joker1', 'name: joker2'],
    ] as const) {
      const dir = await joker1();
      const yaml = readFileSync(join(dir, 'agent.yaml'), 'utf8');
      expect(yaml).toContain(from);
      writeFileSync(join(dir, 'agent.yaml'), yaml.replace(from, to));
      expect(await verifyPack(dir, { selectKey: selectorFor(root) })).toMatchObject({
        kind: 'invalid',
        reason: 'identity-mismatch',
        pack: 'joker1',
        packVersion: '0.1.3',
      });
    }
  });

  it('with a trust root that does not hold the store key: untrusted-key', async () => {
    const other = await makeSigner('someone-else');
    expect(await verifyPack(await joker1(), { selectKey: other.selectKey })).toMatchObject({
      kind: 'untrusted-key',
      kid: KID,
      reason: 'unknown-kid',
    });
  });

  it('with the JWKS pinned to another thumbprint: the store key is not trusted', async () => {
    const root = await loadPackTrustRoot({
      jwksUrl,
      pins: ['A'.repeat(43)],
      env: {},
      cacheDir: false,
    });
    const result = await verifyPack(await joker1(), { selectKey: selectorFor(root) });
    expect(['untrusted-key', 'trust-root-unavailable']).toContain(result.kind);
  });
});
