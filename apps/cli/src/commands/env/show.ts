import { EXIT } from '../../errors.js';
import { printJson, terminalSafe, type CliIo } from '../../io.js';

/**
 * The variables packwarden reads (apps/cli/README.md "Environment"), each also under its
 * `AGENTHIPPO_*` alias through pack-manifest's one lookup. Secrets are reported as set, never
 * shown.
 */
const VARIABLES: ReadonlyArray<{
  name: string;
  about: string;
  secret?: boolean;
  fallbacks?: readonly string[];
}> = [
  { name: 'HOME', about: 'state folder: installed packs, caches (default ~/.packwarden)' },
  { name: 'PACK_SIGNING_KEYS', about: 'trusted keys inline: {kid: PEM} JSON or a JWKS' },
  { name: 'PACK_JWKS_URL', about: 'trusted keys from a JWKS URL (use with PACK_JWKS_PINS)' },
  { name: 'PACK_JWKS_PINS', about: 'RFC 7638 thumbprints the JWKS keys must match' },
  { name: 'PACK_JWKS_MAX_STALE', about: 'how long a cached JWKS may serve when the URL fails' },
  { name: 'LEASE_URL', about: 'control plane; trusted keys from GET <origin>/api/keys' },
  { name: 'REQUIRE_SIGNED_PACK', about: 'yes/no: refuse packs whose pack.sig does not verify' },
  { name: 'ISOLATION', about: 'sandbox isolation: required, auto or off' },
  { name: 'STORE_URL', about: 'the store packs are installed from' },
  { name: 'STORE_REPO', about: 'GitHub repository of the AgentHippo store' },
  { name: 'GITHUB_API_URL', about: 'GitHub API for the AgentHippo store' },
  {
    name: 'GITHUB_TOKEN',
    about: 'token for the GitHub API (else GITHUB_TOKEN, GH_TOKEN)',
    secret: true,
    fallbacks: ['GITHUB_TOKEN', 'GH_TOKEN'],
  },
  { name: 'BASE_URL', about: 'model gateway base URL for `run`' },
  { name: 'MODEL_TOKEN', about: 'model token for `run`', secret: true },
];

export async function showEnv(io: CliIo, options: { json?: boolean }): Promise<number> {
  const { lookupPackwardenEnv } = await import('@packwarden/pack-manifest/resolve');
  const rows = VARIABLES.map((variable) => {
    const warnings: string[] = [];
    const found = lookupPackwardenEnv(io.env, variable.name, warnings);
    const fallback = found
      ? undefined
      : variable.fallbacks?.find((name) => (io.env[name] ?? '').trim() !== '');
    const setBy = found?.variable ?? fallback ?? null;
    const raw = found?.value ?? (fallback === undefined ? undefined : io.env[fallback]);
    return {
      name: `PACKWARDEN_${variable.name}`,
      alias: `AGENTHIPPO_${variable.name}`,
      description: variable.about,
      secret: variable.secret === true,
      setBy,
      value: raw === undefined ? null : variable.secret ? '(hidden)' : raw,
      warnings,
    };
  });
  if (options.json) {
    printJson(io, { variables: rows });
    return EXIT.ok;
  }
  const width = Math.max(...rows.map((row) => row.name.length));
  for (const row of rows) {
    const value =
      row.value === null
        ? 'unset'
        : `${row.setBy === row.name ? '' : `from ${row.setBy}: `}${terminalSafe(row.value.length > 60 ? `${row.value.slice(0, 60)}…` : row.value)}`;
    io.stdout.write(
      `${row.name.padEnd(width)}  ${value}\n${' '.repeat(width + 2)}${row.description}; alias ${row.alias}\n`,
    );
    for (const warning of row.warnings)
      io.stdout.write(`${' '.repeat(width + 2)}warning: ${warning}\n`);
  }
  return EXIT.ok;
}
