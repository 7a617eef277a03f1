import { TRUST_ROOT_LIMITS } from './limits.js';

/**
 * How long a fetched key set stays fresh: `Cache-Control: max-age`, clamped to [60 s, 24 h] so a
 * server can neither make every verification refetch nor pin a key set for days. `no-cache` and
 * `no-store` count as `max-age=0` (so the 60 s floor); without `max-age` the default applies.
 */
export function freshnessMs(cacheControl: string | null): number {
  const { minFreshMs, maxFreshMs, defaultFreshMs } = TRUST_ROOT_LIMITS;
  let ms: number | undefined;
  for (const directive of (cacheControl ?? '').slice(0, 1024).split(',')) {
    const [name, value] = directive.trim().toLowerCase().split('=', 2);
    if (name === 'no-cache' || name === 'no-store') {
      ms = 0;
      break;
    }
    if (name === 'max-age' && value !== undefined) {
      const seconds = /^"?(\d{1,10})"?$/.exec(value.trim());
      if (seconds?.[1] !== undefined) ms ??= Number(seconds[1]) * 1000;
    }
  }
  return Math.min(maxFreshMs, Math.max(minFreshMs, ms ?? defaultFreshMs));
}
