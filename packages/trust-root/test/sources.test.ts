import { describe, expect, it } from 'vitest';
import { resolveOptions } from '../src/options.js';
import { chooseSource } from '../src/sources.js';

describe('chooseSource', () => {
  const env = {
    PACKWARDEN_PACK_SIGNING_KEYS: '{}',
    AGENTHIPPO_PACK_SIGNING_KEYS: '{"other":1}',
    AGENTHIPPO_PACK_JWKS_URL: 'https://keys.example/jwks.json',
    PACKWARDEN_LEASE_URL: 'https://control.example',
  };

  it('names every configured source that loses, in precedence order, after the alias warnings', () => {
    const warnings: string[] = [];
    const choice = chooseSource(
      resolveOptions({
        env,
        keysFile: '/etc/packwarden/keys.json',
        keys: {},
        jwksUrl: 'https://a.example/jwks.json',
        leaseUrl: 'https://b.example',
        cacheDir: false,
      }),
      warnings,
    );
    expect(choice).toEqual({
      kind: 'keys-file',
      configuredBy: 'option',
      path: '/etc/packwarden/keys.json',
    });
    const losers = [
      'the keys option',
      'the JWKS URL option',
      'the lease URL option',
      'PACKWARDEN_PACK_SIGNING_KEYS',
      'AGENTHIPPO_PACK_JWKS_URL',
      'PACKWARDEN_LEASE_URL',
    ];
    expect(warnings.slice(-losers.length)).toEqual(
      losers.map(
        (label) =>
          `${label} is also configured but not used: the keys file option takes precedence.`,
      ),
    );
    // The alias conflict is reported once, before the precedence warnings.
    expect(warnings.slice(0, -losers.length)).toEqual([
      expect.stringContaining('AGENTHIPPO_PACK_SIGNING_KEYS'),
    ]);
  });

  it('takes the environment in the order signing keys, JWKS URL, lease URL, each with its variable', () => {
    expect(chooseSource(resolveOptions({ env, cacheDir: false }), [])).toEqual({
      kind: 'env',
      configuredBy: 'env',
      keys: { value: '{}', variable: 'PACKWARDEN_PACK_SIGNING_KEYS' },
    });
    const withoutKeys = {
      AGENTHIPPO_PACK_JWKS_URL: env.AGENTHIPPO_PACK_JWKS_URL,
      PACKWARDEN_LEASE_URL: env.PACKWARDEN_LEASE_URL,
    };
    expect(chooseSource(resolveOptions({ env: withoutKeys, cacheDir: false }), [])).toEqual({
      kind: 'jwks',
      configuredBy: 'env',
      url: { value: 'https://keys.example/jwks.json', variable: 'AGENTHIPPO_PACK_JWKS_URL' },
    });
    expect(
      chooseSource(
        resolveOptions({ env: { PACKWARDEN_LEASE_URL: 'https://c.example' }, cacheDir: false }),
        [],
      ),
    ).toEqual({
      kind: 'lease',
      configuredBy: 'env',
      url: { value: 'https://c.example', variable: 'PACKWARDEN_LEASE_URL' },
    });
    expect(chooseSource(resolveOptions({ env: {}, cacheDir: false }), [])).toEqual({
      kind: 'none',
      configuredBy: 'none',
    });
  });
});
