/**
 * The one environment allow-list for every child an engine starts (exec commands, the claude and
 * codex CLIs, the host of a custom engine) and for in-process custom engines (the sandbox prunes
 * its own environment to it after boot). Host secrets (`AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN`,
 * the trust-root variables, …) never reach pack code; engines add what a turn needs
 * (`PACKWARDEN_*` of the run, the pack's `spec.exec.env`, the run frame's `turnEnv`).
 * docs/sandbox.md, "Environment".
 */
export const ENGINE_ENV_ALLOWED: RegExp =
  /^(PATH|LANG|LANGUAGE|LC_[A-Z]+|TZ|TERM|COLORTERM|NO_COLOR|SYSTEMROOT|NODE_EXTRA_CA_CERTS|HOME|USER|LOGNAME|TMPDIR|XDG_(CACHE|CONFIG|DATA|STATE|RUNTIME)_(HOME|DIR)|npm_config_cache|PACKWARDEN_HOME|PACKWARDEN_SANDBOX)$/;

/** The part of `env` an engine may see. */
export function engineEnvironment(
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env))
    if (value !== undefined && ENGINE_ENV_ALLOWED.test(key)) out[key] = value;
  return out;
}

/** Removes from `env` (the sandbox's own `process.env`) everything an engine may not see. */
export function pruneEnvironment(env: NodeJS.ProcessEnv): void {
  for (const key of Object.keys(env)) if (!ENGINE_ENV_ALLOWED.test(key)) delete env[key];
}
