import { Option, type Command } from 'commander';
import type { CliIo } from '../io.js';

export interface TrustFlags {
  keys?: string;
  jwks?: string;
  pin?: string[];
  leaseUrl?: string;
}

/** The trust-root flags every command that checks signatures takes; flags beat the environment. */
export function addTrustRootOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--keys <file>', 'trusted keys: a JSON file {kid: PEM} or a JWKS').conflicts([
        'jwks',
        'leaseUrl',
      ]),
    )
    .addOption(
      new Option('--jwks <url>', 'trusted keys from a JWKS URL (HTTPS, or loopback)').conflicts(
        'leaseUrl',
      ),
    )
    .addOption(
      new Option(
        '--pin <thumbprint>',
        'trust only JWKS keys with this RFC 7638 thumbprint (repeatable)',
      ).argParser((value: string, previous: string[] = []) => [...previous, value]),
    )
    .addOption(
      new Option(
        '--lease-url <url>',
        'trusted keys from the control plane (GET <origin>/api/keys)',
      ),
    )
    .addHelpText(
      'after',
      `
Trust root: the first of --keys, --jwks (with --pin), --lease-url, then the environment:
PACKWARDEN_PACK_SIGNING_KEYS (inline keys), PACKWARDEN_PACK_JWKS_URL with
PACKWARDEN_PACK_JWKS_PINS, PACKWARDEN_LEASE_URL. Each also answers to its AGENTHIPPO_* name.`,
    );
}

/** Loads the trust root the flags and environment describe. Never throws for a failing source. */
export async function loadTrustRootFromFlags(
  io: CliIo,
  flags: TrustFlags,
  overrides: { cacheDir?: string | false } = {},
) {
  const { loadPackTrustRoot } = await import('@packwarden/trust-root');
  const { resolve } = await import('node:path');
  return loadPackTrustRoot({
    env: io.env,
    ...(flags.keys === undefined ? {} : { keysFile: resolve(io.cwd, flags.keys) }),
    ...(flags.jwks === undefined ? {} : { jwksUrl: flags.jwks }),
    ...(flags.pin === undefined ? {} : { pins: flags.pin }),
    ...(flags.leaseUrl === undefined ? {} : { leaseUrl: flags.leaseUrl }),
    ...overrides,
  });
}
