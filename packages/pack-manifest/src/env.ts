import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

export type Env = Record<string, string | undefined>;

/**
 * Reads `PACKWARDEN_<name>`, falling back to `AGENTHIPPO_<name>` so that fleets configured for
 * the AgentHippo runtime keep working. packwarden's own name wins; empty counts as unset.
 */
export function readPackwardenEnv(env: Env, name: string): string | undefined {
  for (const prefix of ['PACKWARDEN_', 'AGENTHIPPO_']) {
    const value = env[`${prefix}${name}`];
    if (value !== undefined && value !== '') return value;
  }
  return undefined;
}

/**
 * A yes/no setting such as `PACKWARDEN_REQUIRE_SIGNED_PACK`: on for `1`, `true`, `yes` or `on`
 * (any case), off otherwise. One reading for every tool, so that no command treats a value as
 * "off" that another treats as "on".
 */
export function readPackwardenFlag(env: Env, name: string): boolean {
  const value = readPackwardenEnv(env, name);
  return value !== undefined && /^(1|true|yes|on)$/i.test(value.trim());
}

/** `$PACKWARDEN_HOME` (or `$AGENTHIPPO_HOME`), default `~/.packwarden`, made absolute. */
export function packwardenHome(env: Env = process.env): string {
  const configured = readPackwardenEnv(env, 'HOME');
  return configured ? resolve(configured) : join(env.HOME || homedir(), '.packwarden');
}
