/**
 * The fields of a run that carry secrets (README "Secrets"): each of these a single value…
 * A new secret field of the `run` frame is added here, and only here: the host's scrubbing and
 * pinning (`RunAdmission`), the engine options that hide them, and every engine or embedder that
 * scrubs its own channels (`SecretSet#addRun`) all read these lists.
 */
export const RUN_SECRET_VALUE_FIELDS = Object.freeze(['modelToken', 'gatewaySessionKey'] as const);

/** …and each of these a map whose every value is one (`turnEnv`). */
export const RUN_SECRET_MAP_FIELDS = Object.freeze(['turnEnv'] as const);

/** A run's secret fields, as a `run` frame, an engine's options or an unchecked object has them. */
export type RunSecretFields = {
  readonly [
    field in (typeof RUN_SECRET_VALUE_FIELDS)[number] | (typeof RUN_SECRET_MAP_FIELDS)[number]
  ]?: unknown;
};

/** The values of a run's single-value secret fields (`modelToken`, `gatewaySessionKey`). */
export function namedRunSecrets(run: RunSecretFields): string[] {
  const values: string[] = [];
  for (const field of RUN_SECRET_VALUE_FIELDS) {
    const value = run[field];
    if (typeof value === 'string') values.push(value);
  }
  return values;
}

/**
 * Every secret-bearing string of a run, secret-length or not: `modelToken`, `gatewaySessionKey`,
 * then every `turnEnv` value. Reads non-enumerable fields too (engines get their secrets that way)
 * and skips anything that is not a string, so it is safe on a frame that failed validation.
 */
export function runSecretValues(run: RunSecretFields): string[] {
  const values = namedRunSecrets(run);
  for (const field of RUN_SECRET_MAP_FIELDS) {
    const map = run[field];
    if (map === null || typeof map !== 'object' || Array.isArray(map)) continue;
    for (const value of Object.values(map)) if (typeof value === 'string') values.push(value);
  }
  return values;
}
