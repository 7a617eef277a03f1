import { userInfo } from 'node:os';
import { isAbsolute, join, normalize } from 'node:path';
import { PackManifestError } from './errors.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** A variable's value and the name it was read from (`PACKWARDEN_*` or its `AGENTHIPPO_*` alias). */
export interface PackwardenEnvValue {
  readonly value: string;
  readonly variable: string;
}

/**
 * The one reading of packwarden's environment (README "Environment"): `PACKWARDEN_<name>`, else
 * its alias `AGENTHIPPO_<name>` so that fleets configured for the AgentHippo runtime keep
 * working. Values are trimmed; an empty or blank value counts as unset. When both are set to
 * different values, packwarden's name wins and, given `warnings`, a warning says so.
 */
export function lookupPackwardenEnv(
  env: Env,
  name: string,
  warnings?: string[],
): PackwardenEnvValue | undefined {
  const own = `PACKWARDEN_${name}`;
  const alias = `AGENTHIPPO_${name}`;
  const ownValue = nonBlank(env[own]);
  const aliasValue = nonBlank(env[alias]);
  if (ownValue !== undefined) {
    if (aliasValue !== undefined && aliasValue !== ownValue) {
      warnings?.push(`${alias} is ignored because ${own} is set.`);
    }
    return { value: ownValue, variable: own };
  }
  return aliasValue === undefined ? undefined : { value: aliasValue, variable: alias };
}

/** `lookupPackwardenEnv(env, name)?.value`: the value alone. */
export function readPackwardenEnv(env: Env, name: string): string | undefined {
  return lookupPackwardenEnv(env, name)?.value;
}

const FLAG_ON = ['1', 'true', 'yes', 'on'];
const FLAG_OFF = ['0', 'false', 'no', 'off'];

/**
 * A yes/no setting such as `PACKWARDEN_REQUIRE_SIGNED_PACK`: on for `1`, `true`, `yes`, `on`,
 * off for `0`, `false`, `no`, `off` (any case) or when unset. Anything else throws
 * `ERR_ENV_FLAG_INVALID` naming the variable: for a security setting, a typo such as `required`
 * or `y` must never quietly mean "off". One reading for every tool.
 */
export function readPackwardenFlag(env: Env, name: string): boolean {
  const found = lookupPackwardenEnv(env, name);
  if (found === undefined) return false;
  const value = found.value.toLowerCase();
  if (FLAG_ON.includes(value)) return true;
  if (FLAG_OFF.includes(value)) return false;
  const shown = JSON.stringify(found.value.slice(0, 40)).replace(/[^\x20-\x7e]/g, '?');
  throw new PackManifestError(
    'ERR_ENV_FLAG_INVALID',
    `${found.variable}=${shown} is not a yes/no value: set it to ${FLAG_ON.join(', ')} to turn it on, or ${FLAG_OFF.join(', ')} (or leave it unset) to turn it off; any case.`,
  );
}

/**
 * `$PACKWARDEN_HOME` (or `$AGENTHIPPO_HOME`), default `<home>/.packwarden`. A configured home
 * must be an absolute path. The user's home is `$HOME` only when that is absolute; an empty or
 * relative `$HOME` would put packwarden's state (and the trust-root cache) under the current
 * folder, so the account's home from the user database is used instead. Throws
 * `ERR_ENV_HOME_INVALID` when neither gives an absolute path.
 */
export function packwardenHome(env: Env = process.env): string {
  const configured = lookupPackwardenEnv(env, 'HOME');
  if (configured !== undefined) {
    if (!isAbsolute(configured.value)) {
      throw new PackManifestError(
        'ERR_ENV_HOME_INVALID',
        `${configured.variable} must be an absolute path; it is ${JSON.stringify(configured.value.slice(0, 200))}.`,
      );
    }
    return normalize(configured.value);
  }
  return join(userHome(env), '.packwarden');
}

/**
 * The user's home folder: `$HOME` when it is absolute, else the account's home from the user
 * database; `ERR_ENV_HOME_INVALID` when neither is absolute. Also what `~/` in a pack path means.
 */
export function userHome(env: Env): string {
  const home = env['HOME'];
  if (home !== undefined && isAbsolute(home)) return normalize(home);
  let fromDatabase: string | undefined;
  try {
    fromDatabase = userInfo().homedir;
  } catch {
    fromDatabase = undefined;
  }
  if (fromDatabase !== undefined && isAbsolute(fromDatabase)) return fromDatabase;
  throw new PackManifestError(
    'ERR_ENV_HOME_INVALID',
    'cannot find your home folder: HOME is unset, empty or relative, and the user database has none. Set HOME or PACKWARDEN_HOME to an absolute path.',
  );
}

function nonBlank(value: string | undefined): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}
