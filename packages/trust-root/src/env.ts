import { lookupPackwardenEnv } from '@packwarden/pack-manifest/resolve';

/** Environment variables the trust root reads. Each also answers to its `AGENTHIPPO_*` name. */
export const TRUST_ROOT_ENV = Object.freeze({
  signingKeys: 'PACKWARDEN_PACK_SIGNING_KEYS',
  jwksUrl: 'PACKWARDEN_PACK_JWKS_URL',
  jwksPins: 'PACKWARDEN_PACK_JWKS_PINS',
  jwksMaxStale: 'PACKWARDEN_PACK_JWKS_MAX_STALE',
  leaseUrl: 'PACKWARDEN_LEASE_URL',
  home: 'PACKWARDEN_HOME',
});

export type TrustRootEnvName = (typeof TRUST_ROOT_ENV)[keyof typeof TRUST_ROOT_ENV];

export type EnvLike = Readonly<Record<string, string | undefined>>;

export interface EnvValue {
  readonly value: string;
  /** The variable the value came from: the `PACKWARDEN_*` name or its `AGENTHIPPO_*` alias. */
  readonly variable: string;
}

/** `PACKWARDEN_PACK_JWKS_URL` → `AGENTHIPPO_PACK_JWKS_URL`. */
export function agentHippoAlias(name: TrustRootEnvName): string {
  return `AGENTHIPPO_${name.slice('PACKWARDEN_'.length)}`;
}

/**
 * Reads a variable, falling back to its AgentHippo alias so fleets configured for the AgentHippo
 * runtime keep working: pack-manifest's `lookupPackwardenEnv`, the one reading of packwarden's
 * environment (trimmed, blank is unset, the packwarden name wins with a warning).
 */
export function readEnv(
  env: EnvLike,
  name: TrustRootEnvName,
  warnings: string[],
): EnvValue | undefined {
  return lookupPackwardenEnv(env, name.slice('PACKWARDEN_'.length), warnings);
}
