import type { PackwardenEnvVariable } from '@packwarden/pack-manifest/resolve';

/** What store-client reads (`openStore`, `installArtifact`), for `packwarden env`. */
export const STORE_CLIENT_ENV_VARIABLES: readonly PackwardenEnvVariable[] = Object.freeze([
  {
    name: 'PACKWARDEN_HOME',
    alias: 'AGENTHIPPO_HOME',
    meaning: 'state folder: installed packs, caches (default ~/.packwarden)',
  },
  {
    name: 'PACKWARDEN_STORE_URL',
    alias: 'AGENTHIPPO_STORE_URL',
    meaning: 'the store packs are installed from',
  },
  {
    name: 'PACKWARDEN_STORE_REPO',
    alias: 'AGENTHIPPO_STORE_REPO',
    meaning: 'GitHub repository of the AgentHippo store',
  },
  {
    name: 'PACKWARDEN_GITHUB_API_URL',
    alias: 'AGENTHIPPO_GITHUB_API_URL',
    meaning: 'GitHub API for the AgentHippo store',
  },
  {
    name: 'PACKWARDEN_GITHUB_TOKEN',
    alias: 'AGENTHIPPO_GITHUB_TOKEN',
    meaning: 'token for the GitHub API (else GITHUB_TOKEN, GH_TOKEN)',
    secret: true,
    fallbacks: ['GITHUB_TOKEN', 'GH_TOKEN'],
  },
  {
    name: 'PACKWARDEN_REQUIRE_SIGNED_PACK',
    alias: 'AGENTHIPPO_REQUIRE_SIGNED_PACK',
    meaning: 'yes/no: refuse packs whose pack.sig does not verify',
  },
]);
