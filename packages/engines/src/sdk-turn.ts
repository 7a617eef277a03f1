import type { EngineRunOptions } from '@packwarden/runner-host';

/** A turn failure the runner host turns into `failed` with this `snake_case` code. */
export function turnFailure(code: string, message: string, retryable = false): Error {
  return Object.assign(new Error(message), { code, retryable });
}

/**
 * The environment of an SDK engine's CLI for one turn: the base environment plus the run's
 * `turnEnv`. Routing variables are set by each engine on top of this, never on argv.
 */
export function sdkChildEnvironment(
  baseEnv: Record<string, string | undefined>,
  runOptions: EngineRunOptions,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(baseEnv)) if (value !== undefined) env[key] = value;
  Object.assign(env, runOptions.turnEnv ?? {});
  return env;
}

/** A controller that aborts with the run's signal (for SDKs that take a controller). */
export function linkedController(signal: AbortSignal): {
  controller: AbortController;
  unlink: () => void;
} {
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal.reason);
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  return { controller, unlink: () => signal.removeEventListener('abort', onAbort) };
}
