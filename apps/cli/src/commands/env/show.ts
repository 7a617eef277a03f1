import { EXIT } from '../../errors.js';
import {
  PACK_MANIFEST_ENV_VARIABLES,
  type PackwardenEnvVariable,
} from '@packwarden/pack-manifest/resolve';
import { SANDBOX_ENV_VARIABLES } from '@packwarden/sandbox/env';
import { STORE_CLIENT_ENV_VARIABLES } from '@packwarden/store-client/env';
import { TRUST_ROOT_ENV_VARIABLES } from '@packwarden/trust-root/env';
import { printJson, terminalSafe, type CliIo } from '../../io.js';

/**
 * The variables packwarden reads (apps/cli/README.md "Environment"): the concatenation of the
 * lists each library exports next to its reading code, so none is kept here. A variable read by
 * two libraries is listed once. Secrets are reported as set, never shown.
 */
function variables(): PackwardenEnvVariable[] {
  const byName = new Map<string, PackwardenEnvVariable>();
  for (const variable of [
    ...PACK_MANIFEST_ENV_VARIABLES,
    ...TRUST_ROOT_ENV_VARIABLES,
    ...STORE_CLIENT_ENV_VARIABLES,
    ...SANDBOX_ENV_VARIABLES,
  ])
    if (!byName.has(variable.name)) byName.set(variable.name, variable);
  return [...byName.values()];
}

/**
 * A URL's user name and password are credentials whatever variable holds them
 * (`PACKWARDEN_BASE_URL=https://user:pass@gateway…`): shown as `(hidden)`, the rest as given.
 */
function hideUserinfo(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return value;
  }
  if (url.username === '' && url.password === '') return value;
  // Rebuilt from the parsed URL: its user information ends at the last `@` before the host,
  // which a password may itself contain.
  url.username = '';
  url.password = '';
  return url.href.replace(`${url.protocol}//`, `${url.protocol}//(hidden)@`);
}

export async function showEnv(io: CliIo, options: { json?: boolean }): Promise<number> {
  const { lookupPackwardenEnv } = await import('@packwarden/pack-manifest/resolve');
  const rows = variables().map((variable) => {
    const warnings: string[] = [];
    const found = lookupPackwardenEnv(io.env, variable.name.slice('PACKWARDEN_'.length), warnings);
    const fallback = found
      ? undefined
      : variable.fallbacks?.find((name) => (io.env[name] ?? '').trim() !== '');
    const setBy = found?.variable ?? fallback ?? null;
    const raw = found?.value ?? (fallback === undefined ? undefined : io.env[fallback]);
    return {
      name: variable.name,
      alias: variable.alias ?? null,
      description: variable.meaning,
      secret: variable.secret === true,
      setBy,
      value: raw === undefined ? null : variable.secret ? '(hidden)' : hideUserinfo(raw),
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
      `${row.name.padEnd(width)}  ${value}\n${' '.repeat(width + 2)}${row.description}${row.alias === null ? '' : `; alias ${row.alias}`}\n`,
    );
    for (const warning of row.warnings)
      io.stdout.write(`${' '.repeat(width + 2)}warning: ${warning}\n`);
  }
  return EXIT.ok;
}
