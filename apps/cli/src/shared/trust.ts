import { Option, type Command } from 'commander';
import type { KeySelector } from '@packwarden/pack-signature';
import type { PackTrustRoot } from '@packwarden/trust-root';
import { CliError, EXIT } from '../errors.js';
import { terminalSafe as safe, type CliIo } from '../io.js';

export interface TrustFlags {
  keys?: string;
  jwks?: string;
  pin?: string[];
  leaseUrl?: string;
}

/** The trust-root flags given on the command line, as the user wrote them (`--keys`, `--pin`). */
export function trustFlagsGiven(flags: TrustFlags): string[] {
  return [
    flags.keys !== undefined ? '--keys' : undefined,
    flags.jwks !== undefined ? '--jwks' : undefined,
    (flags.pin?.length ?? 0) > 0 ? '--pin' : undefined,
    flags.leaseUrl !== undefined ? '--lease-url' : undefined,
  ].filter((flag) => flag !== undefined);
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
        'trust only JWKS keys with this RFC 7638 thumbprint (repeatable; with --jwks or --lease-url, refused with local keys)',
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
PACKWARDEN_PACK_JWKS_PINS, PACKWARDEN_LEASE_URL. Each also answers to its AGENTHIPPO_* name.
--pin applies to a JWKS or the control plane: with local keys (--keys, PACKWARDEN_PACK_SIGNING_KEYS)
it would be ignored, so it is refused (exit 2).`,
    );
}

/**
 * `--pin` narrows a remote key set (`--jwks`, `--lease-url` or their variables) to the pinned
 * thumbprints; trust-root ignores pins for local keys (a keys file, `PACKWARDEN_PACK_SIGNING_KEYS`)
 * with a warning only. Every local key would then be trusted while the command line reads as
 * pinned: a key added to a keys file the pins were meant to guard, or a signing-keys variable the
 * environment added over the JWKS URL the pins were written for, would decide alone. Refused
 * (exit 2, `ERR_CLI_TRUST_CONFIG`), like every trust flag that would check nothing.
 */
function refuseIgnoredPins(flags: TrustFlags, root: PackTrustRoot): void {
  if ((flags.pin?.length ?? 0) === 0) return;
  const { kind, path, variable } = root.source;
  if (kind !== 'keys-file' && kind !== 'inline' && kind !== 'env') return;
  const keys =
    kind === 'keys-file'
      ? `the keys file ${path ?? ''}`
      : kind === 'env'
        ? `the keys in ${variable ?? 'the environment'}`
        : 'inline keys';
  throw new CliError(
    `--pin applies to a JWKS URL or the control plane only, and the trust root in use is ${keys}: the pins would be ignored and every key there trusted`,
    EXIT.usage,
    'pin the keys of a JWKS with --jwks URL --pin THUMBPRINT (or --lease-url), or leave --pin out and keep only the keys you trust in the keys file',
    { code: 'ERR_CLI_TRUST_CONFIG' },
  );
}

/**
 * Loads the trust root the flags and environment describe. Never throws for a failing source;
 * throws `ERR_CLI_TRUST_CONFIG` when `--pin` is given and the keys in use are local
 * (`refuseIgnoredPins`).
 */
export async function loadTrustRootFromFlags(
  io: CliIo,
  flags: TrustFlags,
  overrides: { cacheDir?: string | false } = {},
): Promise<PackTrustRoot> {
  const { loadPackTrustRoot } = await import('@packwarden/trust-root');
  const { resolve } = await import('node:path');
  const root = await loadPackTrustRoot({
    env: io.env,
    ...(flags.keys === undefined ? {} : { keysFile: resolve(io.cwd, flags.keys) }),
    ...(flags.jwks === undefined ? {} : { jwksUrl: flags.jwks }),
    ...(flags.pin === undefined ? {} : { pins: flags.pin }),
    ...(flags.leaseUrl === undefined ? {} : { leaseUrl: flags.leaseUrl }),
    ...overrides,
  });
  refuseIgnoredPins(flags, root);
  return root;
}

/**
 * The trust root the flags and environment describe, for a command that checks signatures. A
 * root unavailable because of its own configuration (a bad pin, an unreadable or malformed keys
 * file, a plain-HTTP URL) is a usage error (exit 2), not a retryable outage (trust-root README
 * "classifyTrustRoot"). Warnings go to stderr.
 */
export async function loadTrustRootOrExit(
  io: CliIo,
  flags: TrustFlags,
  overrides: { cacheDir?: string | false } = {},
): Promise<PackTrustRoot> {
  const root = await loadTrustRootFromFlags(io, flags, overrides);
  const { classifyTrustRoot } = await import('@packwarden/trust-root');
  if (root.status === 'unavailable' && classifyTrustRoot(root) === 'config') {
    throw new CliError(
      `the trust root is misconfigured: ${root.reason}`,
      EXIT.usage,
      'check --keys / --jwks / --pin and the PACKWARDEN_* variables',
      { code: 'ERR_CLI_TRUST_CONFIG' },
    );
  }
  for (const warning of root.warnings) io.stderr.write(`warning: ${safe(warning)}\n`);
  return root;
}

/**
 * `run` and `sandbox` read the trust root only to verify a pack whose signature is required: given
 * without that, `--keys`, `--jwks`, `--pin` or `--lease-url` would check nothing, and the pack
 * would run unverified while the command line reads as if it were checked. Refused (exit 2,
 * `ERR_CLI_TRUST_CONFIG`), as installs never ignore them either (`installPolicy`).
 */
export function refuseUncheckedTrustFlags(flags: TrustFlags, requireSigned: boolean): void {
  if (requireSigned) return;
  const given = trustFlagsGiven(flags);
  if (given.length === 0) return;
  throw new CliError(
    `${given.join(', ')} given without --require-signed-pack: nothing would be verified, and the pack would run unchecked`,
    EXIT.usage,
    'add --require-signed-pack (or set PACKWARDEN_REQUIRE_SIGNED_PACK=1) to run only a pack whose pack.sig verifies against that trust root, or leave the trust-root flags out',
    { code: 'ERR_CLI_TRUST_CONFIG' },
  );
}

/**
 * `--require-signed` (or `--require-signed-pack`) or `PACKWARDEN_REQUIRE_SIGNED_PACK`. A value of
 * this security variable that is neither yes nor no is a usage error (exit 2), never "off"
 * (docs/sandbox.md; issue 9 W8).
 */
export async function requireSignedFrom(io: CliIo, flag: boolean | undefined): Promise<boolean> {
  if (flag === true) return true;
  const { readPackwardenFlag } = await import('@packwarden/pack-manifest/resolve');
  try {
    return readPackwardenFlag(io.env, 'REQUIRE_SIGNED_PACK');
  } catch (error) {
    throw new CliError(
      (error as Error).message,
      EXIT.usage,
      'set it to 1 / true / yes / on, or 0 / false / no / off, or unset it (the flag --require-signed also turns it on)',
    );
  }
}

/**
 * The signature policy of every install (store, local archive, OCI, locked): signatures are
 * required with --require-signed or the variable, and checked whenever a trust root is given
 * (flags or environment), required or not: trust flags are never silently ignored (issue 9 W11).
 */
export async function installPolicy(
  io: CliIo,
  flags: TrustFlags & { requireSigned?: boolean },
): Promise<{ requireSigned: boolean; selectKey?: KeySelector }> {
  const requireSigned = await requireSignedFrom(io, flags.requireSigned);
  const loaded = await loadTrustRootOrExit(io, flags);
  const root = requireSigned || loaded.status !== 'none' ? loaded : undefined;
  if (!root) return { requireSigned };
  const { selectTrustedKey } = await import('@packwarden/trust-root');
  return { requireSigned, selectKey: (kid, at) => selectTrustedKey(root, kid, { at }) };
}
