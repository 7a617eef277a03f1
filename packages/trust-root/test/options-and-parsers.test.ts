import { describe, expect, it } from 'vitest';
import {
  agentHippoAlias,
  loadPackTrustRoot,
  parseDuration,
  parsePins,
  TRUST_ROOT_ENV,
  TRUST_ROOT_LIMITS,
  TrustRootError,
} from '../src/index.js';

describe('parseDuration', () => {
  it.each([
    ['72h', 72 * 3_600_000],
    ['30m', 30 * 60_000],
    ['90s', 90_000],
    ['3600', 3_600_000],
    ['1d', 86_400_000],
    ['250ms', 250],
    ['0', 0],
  ])('parses %s', (text, ms) => {
    expect(parseDuration(text, TRUST_ROOT_LIMITS.maxMaxStaleMs)).toBe(ms);
  });

  it.each(['', '72 h', '3 days', '-1h', '1.5h', '1w', 'h', '72H'])('refuses %j', (text) => {
    expect(() => parseDuration(text, TRUST_ROOT_LIMITS.maxMaxStaleMs)).toThrow(
      expect.objectContaining({ code: 'ERR_DURATION_INVALID' }),
    );
  });

  it('refuses a duration above the bound', () => {
    expect(() => parseDuration('31d', TRUST_ROOT_LIMITS.maxMaxStaleMs)).toThrow(TrustRootError);
  });
});

describe('parsePins', () => {
  it('splits, trims and de-duplicates', () => {
    const pin = 'S9FC_5c2n3eZEAD1bQ_46jn24OADyXq0kITicUEUpgs';
    expect(parsePins(` ${pin},${pin}, `)).toEqual([pin]);
  });
});

describe('environment names', () => {
  it('maps every PACKWARDEN_ variable to its AGENTHIPPO_ alias', () => {
    expect(Object.values(TRUST_ROOT_ENV).map(agentHippoAlias)).toEqual([
      'AGENTHIPPO_PACK_SIGNING_KEYS',
      'AGENTHIPPO_PACK_JWKS_URL',
      'AGENTHIPPO_PACK_JWKS_PINS',
      'AGENTHIPPO_PACK_JWKS_MAX_STALE',
      'AGENTHIPPO_LEASE_URL',
      'AGENTHIPPO_HOME',
    ]);
  });
});

describe('options', () => {
  it.each([
    ['timeoutMs 0', { timeoutMs: 0 }],
    ['timeoutMs above 5 s', { timeoutMs: 5_001 }],
    ['maxStaleMs negative', { maxStaleMs: -1 }],
    ['maxStaleMs above 30 days', { maxStaleMs: TRUST_ROOT_LIMITS.maxMaxStaleMs + 1 }],
    ['an empty keysFile', { keysFile: '' }],
    ['a non-string pin', { pins: [1 as unknown as string] }],
    ['keys as a number', { keys: 5 as unknown as string }],
    ['fetch not a function', { fetch: 'x' as unknown as typeof fetch }],
    ['an empty cacheDir', { cacheDir: '' }],
  ])('rejects %s with ERR_INVALID_OPTIONS', async (_name, options) => {
    await expect(loadPackTrustRoot({ env: {}, ...options })).rejects.toMatchObject({
      name: 'TrustRootError',
      code: 'ERR_INVALID_OPTIONS',
    });
  });
});
