import { readEnv, TRUST_ROOT_ENV, type EnvValue } from './env.js';
import type { ResolvedOptions } from './options.js';

/** The configured source that wins, before anything is read or fetched. */
export type SourceChoice =
  | { readonly kind: 'keys-file'; readonly configuredBy: 'option'; readonly path: string }
  | { readonly kind: 'inline'; readonly configuredBy: 'option'; readonly keys: string | object }
  | { readonly kind: 'env'; readonly configuredBy: 'env'; readonly keys: EnvValue }
  | { readonly kind: 'jwks'; readonly configuredBy: 'option'; readonly url: string | URL }
  | { readonly kind: 'jwks'; readonly configuredBy: 'env'; readonly url: EnvValue }
  | { readonly kind: 'lease'; readonly configuredBy: 'option'; readonly url: string | URL }
  | { readonly kind: 'lease'; readonly configuredBy: 'env'; readonly url: EnvValue }
  | { readonly kind: 'none'; readonly configuredBy: 'none' };

/**
 * Explicit options (CLI flags) beat the environment; within each, the order of the README, "Sources and precedence":
 * keys file, inline keys, JWKS URL, control plane. Configured sources that lose are named in a
 * warning, so `trust show` can explain why they are not used.
 */
export function chooseSource(options: ResolvedOptions, warnings: string[]): SourceChoice {
  const candidates: { label: string; choice: SourceChoice }[] = [];
  if (options.keysFile !== undefined) {
    candidates.push({
      label: 'the keys file option',
      choice: { kind: 'keys-file', configuredBy: 'option', path: options.keysFile },
    });
  }
  if (options.keys !== undefined) {
    candidates.push({
      label: 'the keys option',
      choice: { kind: 'inline', configuredBy: 'option', keys: options.keys },
    });
  }
  if (options.jwksUrl !== undefined) {
    candidates.push({
      label: 'the JWKS URL option',
      choice: { kind: 'jwks', configuredBy: 'option', url: options.jwksUrl },
    });
  }
  if (options.leaseUrl !== undefined) {
    candidates.push({
      label: 'the lease URL option',
      choice: { kind: 'lease', configuredBy: 'option', url: options.leaseUrl },
    });
  }
  const envKeys = readEnv(options.env, TRUST_ROOT_ENV.signingKeys, warnings);
  if (envKeys !== undefined)
    candidates.push({
      label: envKeys.variable,
      choice: { kind: 'env', configuredBy: 'env', keys: envKeys },
    });
  const envJwks = readEnv(options.env, TRUST_ROOT_ENV.jwksUrl, warnings);
  if (envJwks !== undefined)
    candidates.push({
      label: envJwks.variable,
      choice: { kind: 'jwks', configuredBy: 'env', url: envJwks },
    });
  const envLease = readEnv(options.env, TRUST_ROOT_ENV.leaseUrl, warnings);
  if (envLease !== undefined)
    candidates.push({
      label: envLease.variable,
      choice: { kind: 'lease', configuredBy: 'env', url: envLease },
    });

  const [winner, ...losers] = candidates;
  if (winner === undefined) return { kind: 'none', configuredBy: 'none' };
  for (const loser of losers) {
    warnings.push(
      `${loser.label} is also configured but not used: ${winner.label} takes precedence.`,
    );
  }
  return winner.choice;
}
