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

/** `$PACKWARDEN_HOME` (or `$AGENTHIPPO_HOME`), default `~/.packwarden`, made absolute. */
export function packwardenHome(env: Env = process.env): string {
  const configured = readPackwardenEnv(env, 'HOME');
  return configured ? resolve(configured) : join(env.HOME || homedir(), '.packwarden');
}
