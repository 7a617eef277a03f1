import type { PackwardenEnvVariable } from '@packwarden/pack-manifest/resolve';
import { agentHippoAlias, TRUST_ROOT_ENV, type TrustRootEnvName } from './env.js';

const entry = (name: TrustRootEnvName, meaning: string): PackwardenEnvVariable => ({
  name,
  alias: agentHippoAlias(name),
  meaning,
});

/** What the trust root reads (`TRUST_ROOT_ENV`, README "Environment"), for `packwarden env`. */
export const TRUST_ROOT_ENV_VARIABLES: readonly PackwardenEnvVariable[] = Object.freeze([
  entry(TRUST_ROOT_ENV.signingKeys, 'trusted keys inline: {kid: PEM} JSON or a JWKS'),
  entry(TRUST_ROOT_ENV.jwksUrl, 'trusted keys from a JWKS URL (use with PACK_JWKS_PINS)'),
  entry(TRUST_ROOT_ENV.jwksPins, 'RFC 7638 thumbprints the JWKS keys must match'),
  entry(TRUST_ROOT_ENV.jwksMaxStale, 'how long a cached JWKS may serve when the URL fails'),
  entry(TRUST_ROOT_ENV.leaseUrl, 'control plane; trusted keys from GET <origin>/api/keys'),
  entry(TRUST_ROOT_ENV.home, 'state folder: installed packs, caches (default ~/.packwarden)'),
]);
