import type { KeyObject } from 'node:crypto';
import type { TrustRootErrorCode } from './errors.js';

export type TrustRootStatus = 'none' | 'ok' | 'unavailable';

export type TrustRootSourceKind = 'keys-file' | 'inline' | 'env' | 'jwks' | 'lease' | 'none';

/** The public JWK of a trusted key, normalised: only ES256 on P-256 is ever trusted. */
export interface P256PublicJwk {
  readonly kty: 'EC';
  readonly crv: 'P-256';
  readonly x: string;
  readonly y: string;
  readonly kid: string;
  readonly alg: 'ES256';
  readonly use: 'sig';
}

export interface TrustedKey {
  readonly kid: string;
  /** Usable as the key of jose's `compactVerify` (restrict `algorithms` to `['ES256']`). */
  readonly key: KeyObject;
  readonly jwk: P256PublicJwk;
  /** RFC 7638 SHA-256 thumbprint, unpadded base64url: the value pins are compared with. */
  readonly thumbprint: string;
  /** The key signs nothing with an `iat` before this instant. */
  readonly notBefore?: Date;
  /** The key signs nothing with an `iat` after this instant. */
  readonly notAfter?: Date;
  /** A revoked key is refused for every signature, whatever its `iat`. */
  readonly revoked: boolean;
}

export type RejectedKeyReason =
  | 'not-pinned'
  | 'ambiguous-kid'
  | 'private-key'
  | 'unsupported-key'
  | 'invalid-key'
  | 'missing-kid';

/** A key the source listed that is not trusted, and why. */
export interface RejectedKey {
  readonly kid?: string;
  readonly thumbprint?: string;
  readonly reason: RejectedKeyReason;
  readonly message: string;
}

export interface TrustRootSource {
  readonly kind: TrustRootSourceKind;
  /** Whether an explicit option (a CLI flag) or the environment selected this source. */
  readonly configuredBy: 'option' | 'env' | 'none';
  /** The environment variable read, `PACKWARDEN_*` or its `AGENTHIPPO_*` alias. */
  readonly variable?: string;
  /** The keys file (`keys-file`). */
  readonly path?: string;
  /** The URL keys are fetched from: the JWKS URL, or `<origin>/api/keys` for a lease. */
  readonly url?: string;
  /** Pins applied to a remote source, when set. */
  readonly pins?: readonly string[];
}

/** How a remote key set was obtained this time. */
export type TrustRootDelivery = 'network' | 'cache' | 'revalidated' | 'stale-cache';

interface TrustRootBase {
  readonly source: TrustRootSource;
  /**
   * Every key the source vouches for, including revoked keys and keys outside their validity
   * window: only `selectTrustedKey` decides whether one may verify a given signature.
   */
  readonly keys: readonly TrustedKey[];
  /** Keys the source listed but that are never trusted (not pinned, ambiguous, private, …). */
  readonly rejectedKeys: readonly RejectedKey[];
  readonly warnings: readonly string[];
  /** True when a cached key set is served because the source failed (network error or 5xx). */
  readonly stale: boolean;
  /** Remote sources: when the key set was downloaded. */
  readonly fetchedAt?: Date;
  /** Remote sources: when the server last confirmed it (200 or 304). */
  readonly validatedAt?: Date;
  /** Remote sources: until when the key set is fresh. */
  readonly expiresAt?: Date;
  readonly delivery?: TrustRootDelivery;
}

export interface OkTrustRoot extends TrustRootBase {
  readonly status: 'ok';
}

export interface NoTrustRoot extends TrustRootBase {
  readonly status: 'none';
  /** Names each way to configure a trust root. */
  readonly reason: string;
}

export interface UnavailableTrustRoot extends TrustRootBase {
  readonly status: 'unavailable';
  readonly reason: string;
  readonly code: TrustRootErrorCode;
  /** True when trying again later may succeed. */
  readonly retryable: boolean;
}

/** `none` (nothing configured) and `unavailable` (configured, failed) are never collapsed. */
export type PackTrustRoot = OkTrustRoot | NoTrustRoot | UnavailableTrustRoot;
