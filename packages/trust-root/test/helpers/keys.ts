import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calculateJwkThumbprint, CompactSign } from 'jose';

export interface TestKey {
  readonly kid: string;
  readonly publicKey: KeyObject;
  readonly privateKey: KeyObject;
  /** Public JWK as a JWKS would publish it. */
  readonly jwk: Record<string, string>;
  readonly pem: string;
  /** Computed by jose, independently of the code under test. */
  readonly thumbprint: string;
}

export async function makeKey(kid: string, curve: 'P-256' | 'P-384' = 'P-256'): Promise<TestKey> {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: curve });
  const exported = publicKey.export({ format: 'jwk' }) as Record<string, string>;
  const jwk = { ...exported, kid, alg: curve === 'P-256' ? 'ES256' : 'ES384', use: 'sig' };
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const thumbprint = await calculateJwkThumbprint(
    { kty: 'EC', crv: exported['crv']!, x: exported['x']!, y: exported['y']! },
    'sha256',
  );
  return { kid, publicKey, privateKey, jwk, pem, thumbprint };
}

/** A JWKS of test keys (their public JWK) and raw entries (as given, however malformed). */
export function jwks(...keys: unknown[]): { keys: unknown[] } {
  return { keys: keys.map((key) => (isTestKey(key) ? key.jwk : key)) };
}

function isTestKey(value: unknown): value is TestKey {
  return typeof value === 'object' && value !== null && 'jwk' in value && 'privateKey' in value;
}

export async function signWith(key: TestKey, payload: object): Promise<string> {
  return new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: key.kid })
    .sign(key.privateKey);
}

export interface TempDir {
  readonly path: string;
  cleanup(): Promise<void>;
}

export async function tempDir(): Promise<TempDir> {
  const path = await mkdtemp(join(tmpdir(), 'trust-root-test-'));
  return { path, cleanup: () => rm(path, { recursive: true, force: true }) };
}

/** A fetch that must never be called; it counts calls and fails loudly if it is. */
export function forbiddenFetch(): { fetch: typeof globalThis.fetch; calls: () => number } {
  let calls = 0;
  const fetch = (async () => {
    calls += 1;
    throw new Error('network access is forbidden in this test');
  }) as typeof globalThis.fetch;
  return { fetch, calls: () => calls };
}

/** A clock the test moves. */
export function clock(start = new Date('2026-09-01T12:00:00Z')): {
  now: () => Date;
  advance(ms: number): void;
} {
  let current = start.getTime();
  return {
    now: () => new Date(current),
    advance: (ms) => {
      current += ms;
    },
  };
}
