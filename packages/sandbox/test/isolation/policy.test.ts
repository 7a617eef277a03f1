import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SandboxError } from '../../src/errors.js';
import { createConfinement, type ConfinementPolicy } from '../../src/isolation/index.js';
import { isAllowedTarget, parseAllowedOrigin } from '../../src/isolation/origins.js';

describe('allowOrigins entries', () => {
  it.each([
    ['https://api.example.com', { scheme: 'https', host: 'api.example.com', port: 443 }],
    ['http://127.0.0.1:8080', { scheme: 'http', host: '127.0.0.1', port: 8080 }],
    ['https://API.Example.COM./', { scheme: 'https', host: 'api.example.com', port: 443 }],
    ['example.org:443', { scheme: 'any', host: 'example.org', port: 443 }],
    ['http://[::1]:9000', { scheme: 'http', host: '::1', port: 9000 }],
    ['https://bücher.example', { scheme: 'https', host: 'xn--bcher-kva.example', port: 443 }],
  ])('%s is an origin', (entry, origin) => {
    expect(parseAllowedOrigin(entry)).toEqual(origin);
  });

  it.each([
    '',
    'example.org',
    'ftp://example.org',
    'https://user:pw@example.org',
    'https://example.org/v1',
    'https://example.org?x=1',
    'https://example.org#f',
    'example.org:0',
    'example.org:65536',
    'file:///etc/passwd',
    'https://*.example.org',
    `https://${'a'.repeat(3000)}.org`,
  ])('%j is refused with ERR_ISOLATION_POLICY_INVALID', (entry) => {
    expect(() => parseAllowedOrigin(entry)).toThrow(
      expect.objectContaining({ code: 'ERR_ISOLATION_POLICY_INVALID' }),
    );
  });

  it('any string either parses or is refused with the typed code (never another error)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.webUrl(), fc.webAuthority()), (entry) => {
        try {
          const origin = parseAllowedOrigin(entry);
          expect(origin.port).toBeGreaterThanOrEqual(1);
          expect(origin.host).toBe(origin.host.toLowerCase());
        } catch (error) {
          expect(error).toBeInstanceOf(SandboxError);
          expect((error as SandboxError).code).toBe('ERR_ISOLATION_POLICY_INVALID');
        }
      }),
    );
  });

  it('a target is admitted exactly when an origin has its host and port (and, for plain HTTP, not https)', () => {
    const origin = fc.record({
      scheme: fc.constantFrom('http' as const, 'https' as const, 'any' as const),
      host: fc.constantFrom('a.example', 'b.example', '127.0.0.1'),
      port: fc.constantFrom(80, 443, 8080),
    });
    fc.assert(
      fc.property(
        fc.array(origin, { maxLength: 4 }),
        origin,
        fc.boolean(),
        (allowed, target, tunnel) => {
          const expected = allowed.some(
            (o) =>
              o.host === target.host && o.port === target.port && (tunnel || o.scheme !== 'https'),
          );
          expect(
            isAllowedTarget(
              { scheme: tunnel ? 'tunnel' : 'http', host: target.host, port: target.port },
              allowed,
            ),
          ).toBe(expected);
        },
      ),
    );
  });
});

describe('createConfinement: policy and modes', () => {
  let root: string;
  let runtimeParent: string;
  let policy: ConfinementPolicy;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'pw-policy-'));
    runtimeParent = join(root, 'runtime');
    for (const dir of ['pack', 'workspace', 'state', 'runtime']) await mkdir(join(root, dir));
    policy = {
      packDir: join(root, 'pack'),
      workspace: join(root, 'workspace'),
      engineStateDir: join(root, 'state'),
      fileAccess: 'workspace-write',
      allowOrigins: [],
    };
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it.each<[string, (p: ConfinementPolicy) => ConfinementPolicy]>([
    ['a relative workspace', (p) => ({ ...p, workspace: 'workspace' })],
    ['a missing pack folder', (p) => ({ ...p, packDir: join(root, 'nope') })],
    ['the root folder as workspace', (p) => ({ ...p, workspace: '/' })],
    ['the pack as its own workspace', (p) => ({ ...p, workspace: p.packDir })],
    ['the pack as the engine state', (p) => ({ ...p, engineStateDir: p.packDir })],
    ['an unknown fileAccess', (p) => ({ ...p, fileAccess: 'everything' as 'full' })],
    ['a malformed origin', (p) => ({ ...p, allowOrigins: ['https://example.org/path'] })],
    [
      'too many origins',
      (p) => ({ ...p, allowOrigins: Array.from({ length: 257 }, (_, i) => `h${i}.example:443`) }),
    ],
  ])('refuses %s with ERR_ISOLATION_POLICY_INVALID and creates nothing', async (_, change) => {
    await expect(
      createConfinement(change(policy), { mode: 'required', runtimeParent }),
    ).rejects.toMatchObject({
      code: 'ERR_ISOLATION_POLICY_INVALID',
    });
    expect(await readdir(runtimeParent)).toEqual([]);
  });

  it('refuses an unknown mode', async () => {
    await expect(createConfinement(policy, { mode: 'maybe' as 'auto' })).rejects.toMatchObject({
      code: 'ERR_ISOLATION_POLICY_INVALID',
    });
  });

  it('off: the wrapper is the identity and every guarantee says why it is not enforced', async () => {
    const confinement = await createConfinement(policy, { mode: 'off', runtimeParent });
    const command = { file: 'x', args: [], cwd: '/', env: {} };
    expect(confinement.wrap(command)).toBe(command);
    expect(confinement.guarantees).toEqual(
      ['fs-read', 'fs-write', 'network', 'processes'].map((id) => ({
        id,
        status: 'unavailable',
        reason: 'isolation is off',
      })),
    );
    expect(await readdir(runtimeParent)).toEqual([]);
  });

  it('refuses an environment variable the launcher cannot carry, and a model origin that is not a URL', async () => {
    const confinement = await createConfinement(policy, { mode: 'required', runtimeParent });
    try {
      expect(() =>
        confinement.wrap({
          file: 'true',
          args: [],
          cwd: policy.workspace,
          env: { 'BAD-NAME': '1' },
        }),
      ).toThrow(expect.objectContaining({ code: 'ERR_ISOLATION_POLICY_INVALID' }));
      expect(() => confinement.allowModelOrigin('not a url')).toThrow(
        expect.objectContaining({ code: 'ERR_ISOLATION_POLICY_INVALID' }),
      );
      expect(() => confinement.allowModelOrigin('file:///etc/passwd')).toThrow(
        expect.objectContaining({ code: 'ERR_ISOLATION_POLICY_INVALID' }),
      );
    } finally {
      await confinement.close();
    }
  });
});
