import { describeMissingTrustRoot } from './describe-trust-root.js';
import { parseDuration } from './duration.js';
import { readEnv, TRUST_ROOT_ENV } from './env.js';
import { TrustRootError } from './errors.js';
import { parseKeyDocument } from './key-document.js';
import { buildKeyRing, type KeyRing } from './key-ring.js';
import { readKeysFile } from './keys-file.js';
import { TRUST_ROOT_LIMITS } from './limits.js';
import { resolveOptions, type LoadPackTrustRootOptions, type ResolvedOptions } from './options.js';
import { parsePins } from './pins.js';
import { loadRemoteKeys, type RemoteKeys } from './remote-source.js';
import { chooseSource, type SourceChoice } from './sources.js';
import { leaseKeysUrl, parseRemoteUrl } from './url-policy.js';
import type { PackTrustRoot, TrustRootSource } from './types.js';

/**
 * Loads the keys a verifier may trust. Never throws for a failing source: the result is `ok`,
 * `none` (nothing configured) or `unavailable` (configured but failed, with `code` and `reason`).
 * Throws `TrustRootError` only for invalid options (`ERR_INVALID_OPTIONS`) and when `signal`
 * aborts (`ERR_ABORTED`). With a keys file, inline keys or env keys no request is ever made.
 */
export async function loadPackTrustRoot(
  options: LoadPackTrustRootOptions = {},
): Promise<PackTrustRoot> {
  const resolved = resolveOptions(options);
  if (resolved.signal?.aborted === true) {
    throw new TrustRootError('ERR_ABORTED', 'loading the trust root was aborted.', {
      cause: resolved.signal.reason,
    });
  }
  const warnings: string[] = [];
  const choice = chooseSource(resolved, warnings);
  if (resolved.cacheWarning !== undefined && (choice.kind === 'jwks' || choice.kind === 'lease')) {
    warnings.push(resolved.cacheWarning);
  }
  if (choice.kind === 'none') {
    return freeze({
      status: 'none',
      reason: describeMissingTrustRoot(),
      source: { kind: 'none', configuredBy: 'none' },
      keys: [],
      rejectedKeys: [],
      warnings,
      stale: false,
    });
  }
  let source: TrustRootSource = sourceOf(choice);
  try {
    if (choice.kind === 'jwks' || choice.kind === 'lease') {
      const pins = choosePins(resolved, warnings);
      source = { ...source, ...(pins.length > 0 ? { pins } : {}) };
      const configured = choice.configuredBy === 'env' ? choice.url.value : choice.url;
      const label = choice.kind === 'jwks' ? 'the JWKS URL' : 'the lease URL';
      const parsed = parseRemoteUrl(
        configured,
        `${label}${choice.configuredBy === 'env' ? ` (${choice.url.variable})` : ''}`,
      );
      const url = choice.kind === 'jwks' ? parsed : leaseKeysUrl(parsed);
      source = { ...source, url: url.href };
      const maxStaleMs = chooseMaxStale(resolved, warnings);
      const remote = await loadRemoteKeys(
        { kind: choice.kind, url, pins, maxStaleMs },
        resolved,
        warnings,
      );
      return okRoot(source, remote.ring, warnings, remote);
    }
    warnIgnoredPins(resolved, warnings);
    const ring = await loadLocalKeys(choice, warnings);
    return okRoot(source, ring, warnings);
  } catch (error) {
    if (!(error instanceof TrustRootError) || error.code === 'ERR_ABORTED') throw error;
    return freeze({
      status: 'unavailable',
      reason: error.message,
      code: error.code,
      retryable: error.retryable,
      source,
      keys: [],
      rejectedKeys: [],
      warnings,
      stale: false,
    });
  }
}

async function loadLocalKeys(
  choice: Extract<SourceChoice, { kind: 'keys-file' | 'inline' | 'env' }>,
  warnings: string[],
): Promise<KeyRing> {
  let input: string | object;
  let what: string;
  if (choice.kind === 'keys-file') {
    const file = await readKeysFile(choice.path);
    warnings.push(...file.warnings);
    input = file.text;
    what = `keys file ${choice.path}`;
  } else if (choice.kind === 'env') {
    input = choice.keys.value;
    what = choice.keys.variable;
  } else {
    input = choice.keys;
    what = 'the keys option';
  }
  const ring = buildKeyRing(parseKeyDocument(input, ['map', 'jwks'], what), {
    strict: true,
    pins: [],
    what,
  });
  warnings.push(...ring.warnings);
  return ring;
}

function choosePins(options: ResolvedOptions, warnings: string[]): string[] {
  const fromEnv = readEnv(options.env, TRUST_ROOT_ENV.jwksPins, warnings);
  if (options.pins !== undefined && options.pins.length > 0) {
    // Explicit pins replace the environment's, they are never merged: a flag can only narrow trust.
    if (fromEnv !== undefined) {
      warnings.push(`${fromEnv.variable} is ignored: the pins option takes precedence.`);
    }
    return parsePins(options.pins);
  }
  return fromEnv === undefined ? [] : parsePins(fromEnv.value);
}

function chooseMaxStale(options: ResolvedOptions, warnings: string[]): number {
  if (options.maxStaleMs !== undefined) return options.maxStaleMs;
  const fromEnv = readEnv(options.env, TRUST_ROOT_ENV.jwksMaxStale, warnings);
  if (fromEnv === undefined) return TRUST_ROOT_LIMITS.defaultMaxStaleMs;
  try {
    return parseDuration(fromEnv.value, TRUST_ROOT_LIMITS.maxMaxStaleMs);
  } catch (error) {
    if (error instanceof TrustRootError) {
      throw new TrustRootError(error.code, `${fromEnv.variable}: ${error.message}`, {
        cause: error,
      });
    }
    throw error;
  }
}

function warnIgnoredPins(options: ResolvedOptions, warnings: string[]): void {
  const hasPins =
    (options.pins !== undefined && options.pins.length > 0) ||
    readEnv(options.env, TRUST_ROOT_ENV.jwksPins, []) !== undefined;
  if (hasPins)
    warnings.push(
      'pins apply to a JWKS URL or the control plane only; they are ignored for local keys.',
    );
}

function sourceOf(choice: Exclude<SourceChoice, { kind: 'none' }>): TrustRootSource {
  switch (choice.kind) {
    case 'keys-file':
      return { kind: 'keys-file', configuredBy: 'option', path: choice.path };
    case 'inline':
      return { kind: 'inline', configuredBy: 'option' };
    case 'env':
      return { kind: 'env', configuredBy: 'env', variable: choice.keys.variable };
    case 'jwks':
    case 'lease':
      return choice.configuredBy === 'env'
        ? { kind: choice.kind, configuredBy: 'env', variable: choice.url.variable }
        : { kind: choice.kind, configuredBy: 'option' };
  }
}

function okRoot(
  source: TrustRootSource,
  ring: KeyRing,
  warnings: string[],
  remote?: RemoteKeys,
): PackTrustRoot {
  if (remote !== undefined) warnings.push(...ring.warnings);
  return freeze({
    status: 'ok',
    source,
    keys: ring.keys,
    rejectedKeys: ring.rejectedKeys,
    warnings,
    stale: remote?.stale ?? false,
    ...(remote === undefined
      ? {}
      : {
          fetchedAt: remote.fetchedAt,
          validatedAt: remote.validatedAt,
          expiresAt: remote.expiresAt,
          delivery: remote.delivery,
        }),
  });
}

function freeze(root: PackTrustRoot): PackTrustRoot {
  Object.freeze(root.keys);
  Object.freeze(root.rejectedKeys);
  Object.freeze(root.warnings);
  if (root.source.pins !== undefined) Object.freeze(root.source.pins);
  Object.freeze(root.source);
  return Object.freeze(root);
}
