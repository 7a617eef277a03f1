import { readEnv, TRUST_ROOT_ENV, type EnvValue, type TrustRootEnvName } from './env.js';
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

interface Candidate {
  readonly label: string;
  readonly choice: SourceChoice;
}

/**
 * Explicit options (CLI flags) beat the environment; within each, the order of the README, "Sources and precedence":
 * keys file, inline keys, JWKS URL, control plane. Configured sources that lose are named in a
 * warning, so `trust show` can explain why they are not used.
 */
export function chooseSource(options: ResolvedOptions, warnings: string[]): SourceChoice {
  const fromOption = <T>(
    label: string,
    value: T | undefined,
    choose: (value: T) => SourceChoice,
  ): Candidate | undefined => (value === undefined ? undefined : { label, choice: choose(value) });
  const fromEnv = (
    name: TrustRootEnvName,
    choose: (value: EnvValue) => SourceChoice,
  ): Candidate | undefined => {
    const value = readEnv(options.env, name, warnings);
    return value === undefined ? undefined : { label: value.variable, choice: choose(value) };
  };
  // In precedence order; every variable is read (and warned about) whether or not it wins.
  const candidates = [
    fromOption('the keys file option', options.keysFile, (path) => ({
      kind: 'keys-file',
      configuredBy: 'option',
      path,
    })),
    fromOption('the keys option', options.keys, (keys) => ({
      kind: 'inline',
      configuredBy: 'option',
      keys,
    })),
    fromOption('the JWKS URL option', options.jwksUrl, (url) => ({
      kind: 'jwks',
      configuredBy: 'option',
      url,
    })),
    fromOption('the lease URL option', options.leaseUrl, (url) => ({
      kind: 'lease',
      configuredBy: 'option',
      url,
    })),
    fromEnv(TRUST_ROOT_ENV.signingKeys, (keys) => ({ kind: 'env', configuredBy: 'env', keys })),
    fromEnv(TRUST_ROOT_ENV.jwksUrl, (url) => ({ kind: 'jwks', configuredBy: 'env', url })),
    fromEnv(TRUST_ROOT_ENV.leaseUrl, (url) => ({ kind: 'lease', configuredBy: 'env', url })),
  ].filter((candidate) => candidate !== undefined);

  const [winner, ...losers] = candidates;
  if (winner === undefined) return { kind: 'none', configuredBy: 'none' };
  for (const loser of losers) {
    warnings.push(
      `${loser.label} is also configured but not used: ${winner.label} takes precedence.`,
    );
  }
  return winner.choice;
}
