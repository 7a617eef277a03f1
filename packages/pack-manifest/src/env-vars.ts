/**
 * One environment variable a library reads, for `packwarden env` and the CLI README
 * "Environment": each library exports the list of what it reads, so the list lives next to the
 * reading code and never in the CLI.
 */
export interface PackwardenEnvVariable {
  /** The `PACKWARDEN_*` name. */
  readonly name: string;
  /** The `AGENTHIPPO_*` name read when `name` is unset (`lookupPackwardenEnv`). */
  readonly alias?: string;
  /** What the value sets, one line. */
  readonly meaning: string;
  /** A secret: tools report whether it is set, never its value. */
  readonly secret?: boolean;
  /** Further variables read, in order, when neither `name` nor `alias` is set. */
  readonly fallbacks?: readonly string[];
}

/** What pack-manifest reads: `packwardenHome` (README "Environment"). */
export const PACK_MANIFEST_ENV_VARIABLES: readonly PackwardenEnvVariable[] = Object.freeze([
  {
    name: 'PACKWARDEN_HOME',
    alias: 'AGENTHIPPO_HOME',
    meaning: 'state folder: installed packs, caches (default ~/.packwarden)',
  },
]);
