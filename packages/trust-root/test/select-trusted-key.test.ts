import { beforeAll, describe, expect, it } from 'vitest';
import { loadPackTrustRoot, selectTrustedKey, type PackTrustRoot } from '../src/index.js';
import { makeKey, type TestKey } from './helpers/keys.js';

let current: TestKey;
let future: TestKey;
let retired: TestKey;
let revoked: TestKey;
let root: PackTrustRoot;

beforeAll(async () => {
  [current, future, retired, revoked] = await Promise.all([
    makeKey('current'),
    makeKey('future'),
    makeKey('retired'),
    makeKey('revoked'),
  ]);
  root = await loadPackTrustRoot({
    env: {},
    cacheDir: false,
    keys: {
      keys: [
        { ...current.jwk, notBefore: '2026-01-01T00:00:00Z', notAfter: '2026-12-31T23:59:59Z' },
        { ...future.jwk, notBefore: 1798761600 /* 2027-01-01T00:00:00Z */ },
        { ...retired.jwk, notAfter: '2025-12-31T23:59:59Z' },
        { ...revoked.jwk, revoked: true },
      ],
    },
  });
});

function at(iso: string): { at: Date } {
  return { at: new Date(iso) };
}

describe('selectTrustedKey: validity windows and revocation at the signature iat', () => {
  it('selects a key inside its window, boundaries included', () => {
    for (const iat of ['2026-01-01T00:00:00Z', '2026-06-01T00:00:00Z', '2026-12-31T23:59:59Z']) {
      const pick = selectTrustedKey(root, 'current', at(iat));
      expect(pick.kind, iat).toBe('ok');
      expect(pick.kind === 'ok' && pick.key.thumbprint).toBe(current.thumbprint);
    }
  });

  it('refuses an iat before notBefore as not-yet-valid', () => {
    expect(selectTrustedKey(root, 'current', at('2025-12-31T23:59:59.999Z'))).toMatchObject({
      kind: 'untrusted-key',
      reason: 'not-yet-valid',
      kid: 'current',
    });
    expect(selectTrustedKey(root, 'future', at('2026-12-31T23:59:59Z'))).toMatchObject({
      kind: 'untrusted-key',
      reason: 'not-yet-valid',
    });
    expect(selectTrustedKey(root, 'future', at('2027-01-01T00:00:00Z')).kind).toBe('ok');
  });

  it('refuses an iat after notAfter as expired', () => {
    expect(selectTrustedKey(root, 'current', at('2027-01-01T00:00:00Z'))).toMatchObject({
      kind: 'untrusted-key',
      reason: 'expired',
    });
    expect(selectTrustedKey(root, 'retired', at('2026-03-01T00:00:00Z'))).toMatchObject({
      kind: 'untrusted-key',
      reason: 'expired',
    });
    // Signatures made while the key was current still verify after it retired.
    expect(selectTrustedKey(root, 'retired', at('2025-06-01T00:00:00Z')).kind).toBe('ok');
  });

  it('refuses a revoked key whatever the iat', () => {
    for (const iat of ['2000-01-01T00:00:00Z', '2026-06-01T00:00:00Z', '2100-01-01T00:00:00Z']) {
      expect(selectTrustedKey(root, 'revoked', at(iat))).toMatchObject({
        kind: 'untrusted-key',
        reason: 'revoked',
      });
    }
  });

  it('refuses an unknown kid', () => {
    const pick = selectTrustedKey(root, 'nobody', at('2026-06-01T00:00:00Z'));
    expect(pick).toMatchObject({ kind: 'untrusted-key', reason: 'unknown-kid', kid: 'nobody' });
    expect(selectTrustedKey(root, '', at('2026-06-01T00:00:00Z'))).toMatchObject({
      kind: 'untrusted-key',
      reason: 'unknown-kid',
    });
  });

  it('throws ERR_INVALID_ARGUMENT without a valid iat', () => {
    expect(() => selectTrustedKey(root, 'current', { at: new Date('nope') })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }),
    );
  });

  it('keeps none and unavailable apart, and never passes them', async () => {
    const none = await loadPackTrustRoot({ env: {}, cacheDir: false });
    const pickNone = selectTrustedKey(none, 'current', at('2026-06-01T00:00:00Z'));
    expect(pickNone.kind).toBe('no-trust-root');
    expect(pickNone.kind === 'no-trust-root' && pickNone.message).toMatch(
      /PACKWARDEN_PACK_SIGNING_KEYS/,
    );
    const unavailable = await loadPackTrustRoot({ env: {}, cacheDir: false, keys: '{"keys": []}' });
    expect(selectTrustedKey(unavailable, 'current', at('2026-06-01T00:00:00Z'))).toMatchObject({
      kind: 'trust-root-unavailable',
      code: 'ERR_NO_USABLE_KEYS',
    });
  });

  it('never passes an ok root whose key ring is empty', () => {
    const forged = { ...root, keys: [] } as PackTrustRoot;
    expect(selectTrustedKey(forged, 'current', at('2026-06-01T00:00:00Z')).kind).toBe(
      'trust-root-unavailable',
    );
  });

  it('returns a frozen root', () => {
    expect(Object.isFrozen(root)).toBe(true);
    expect(Object.isFrozen(root.keys)).toBe(true);
    expect(Object.isFrozen(root.keys[0])).toBe(true);
  });
});
