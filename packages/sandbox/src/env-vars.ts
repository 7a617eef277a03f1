import type { PackwardenEnvVariable } from '@packwarden/pack-manifest/resolve';

/**
 * What the sandbox and `run` read, for `packwarden env`. `ISOLATION`, `BASE_URL` and
 * `MODEL_TOKEN` are read by the `run` command and handed to `runInSandbox` as options; they are
 * listed here, with the library they configure.
 */
export const SANDBOX_ENV_VARIABLES: readonly PackwardenEnvVariable[] = Object.freeze([
  {
    name: 'PACKWARDEN_HOME',
    alias: 'AGENTHIPPO_HOME',
    meaning: 'state folder: installed packs, caches (default ~/.packwarden)',
  },
  {
    name: 'PACKWARDEN_REQUIRE_SIGNED_PACK',
    alias: 'AGENTHIPPO_REQUIRE_SIGNED_PACK',
    meaning: 'yes/no: refuse packs whose pack.sig does not verify',
  },
  {
    name: 'PACKWARDEN_ISOLATION',
    alias: 'AGENTHIPPO_ISOLATION',
    meaning: 'sandbox isolation: required, auto or off',
  },
  {
    name: 'PACKWARDEN_BASE_URL',
    alias: 'AGENTHIPPO_BASE_URL',
    meaning: 'model gateway base URL for `run`',
  },
  {
    name: 'PACKWARDEN_MODEL_TOKEN',
    alias: 'AGENTHIPPO_MODEL_TOKEN',
    meaning: 'model token for `run`',
    secret: true,
  },
]);
