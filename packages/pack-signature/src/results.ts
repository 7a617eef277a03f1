import type { PackManifestDiff } from '@packwarden/pack-digest';
import type { DIGEST_ALGORITHM } from '@packwarden/pack-digest';
import type { EngineIdentity } from './engine-identity.js';
import type { MalformedReason } from './strict-jws.js';

/** What a genuine signature by a trusted key says about the pack. */
export interface PackSignatureClaims {
  /** Pack name (`metadata.name` of `agent.yaml`, checked). */
  pack: string;
  /** Pack version (`metadata.version` of `agent.yaml`, checked). */
  packVersion: string;
  /** The signed content digest. */
  digest: string;
  /** When it was signed. */
  iat: Date;
  /** The key that signed it. */
  kid: string;
  /** The key's RFC 7638 thumbprint, when the key selector gave one. */
  thumbprint?: string;
}

/** Trusted key at `iat`, valid signature, identity and digest match. The only pass. */
export interface PackVerified extends PackSignatureClaims {
  kind: 'verified';
  message: string;
  digestAlg: 'packwarden-digest/1';
}

/** Genuine signature and identity, over a digest whose rules are not public: never a pass. */
export interface PackDigestUnsupported extends PackSignatureClaims {
  kind: 'digest-unsupported';
  message: string;
}

/** Why a pack is `invalid`. */
export type PackInvalidReason =
  /** `pack.sig` fails the strict pre-parser (see `malformed`). */
  | 'malformed'
  /** The ES256 signature does not verify with the trusted key. */
  | 'bad-signature'
  /** The signed payload does not follow the schema (types, ranges, unknown members, a `files` claim that is not a canonical manifest). */
  | 'payload-invalid'
  /** `agent.yaml` is missing or invalid, so the identity cannot be checked. */
  | 'manifest-invalid'
  /** The signed `iat` lies more than `PACK_SIGNATURE_MAX_CLOCK_SKEW_SECONDS` (5 min) after the verifier's clock. */
  | 'issued-in-future'
  /** `pack` / `packVersion` differ from `metadata.name` / `metadata.version`. */
  | 'identity-mismatch'
  /** `digestAlg` names an algorithm other than `packwarden-digest/1`. */
  | 'unknown-digest-alg'
  /** The `files` claim does not hash to the signed `digest`. */
  | 'files-mismatch'
  /** The pack's content no longer has the signed digest. */
  | 'digest-mismatch'
  /** The pack folder or its content cannot be read or digested (missing, permissions, a FIFO…). */
  | 'pack-unreadable';

export interface PackInvalid {
  kind: 'invalid';
  reason: PackInvalidReason;
  message: string;
  /** `reason: 'malformed'`: which pre-parser rule refused the token. */
  malformed?: MalformedReason;
  /** The header's `kid`, once the token parsed. */
  kid?: string;
  /** From a verified signature only: the signed claims. */
  pack?: string;
  packVersion?: string;
  digest?: string;
  iat?: Date;
  thumbprint?: string;
  /** `identity-mismatch`: what `agent.yaml` says. */
  manifest?: { name: string; version: string };
  /** `digest-mismatch`: the digest of the content as it is now. */
  actualDigest?: string;
  /** `digest-mismatch` when the token has `files`: what changed since signing. */
  changes?: PackManifestDiff;
  /** `manifest-invalid` / `pack-unreadable`: the underlying error's code (`ERR_MANIFEST_*`, `ERR_DIGEST_*`). */
  code?: string;
}

export interface PackUnsigned {
  kind: 'unsigned';
  message: string;
}

export interface PackUntrustedKey {
  kind: 'untrusted-key';
  kid: string;
  /** From the key selector, e.g. `unknown-kid`, `not-pinned`, `revoked`, `not-yet-valid`, `expired`. */
  reason: string;
  message: string;
}

export interface PackNoTrustRoot {
  kind: 'no-trust-root';
  /** Names each way to configure a trust root (from the key selector). */
  message: string;
}

export interface PackTrustRootUnavailable {
  kind: 'trust-root-unavailable';
  reason: string;
  retryable: boolean;
  code?: string;
  message: string;
}

/** The outcome of `verifyPack`: the kinds of the README, "Results". */
export type PackVerification =
  | PackVerified
  | PackInvalid
  | PackUnsigned
  | PackUntrustedKey
  | PackNoTrustRoot
  | PackTrustRootUnavailable
  | PackDigestUnsupported;

export type PackVerificationKind = PackVerification['kind'];

/** What a genuine engine signature by a trusted key says. */
export interface EngineSignatureClaims {
  engine: string;
  engineVersion: string;
  digest: string;
  iat: Date;
  kid: string;
  thumbprint?: string;
}

/** Trusted key at `iat`, valid signature, identity and digest match. The only pass. */
export interface EngineVerified extends EngineSignatureClaims {
  kind: 'verified';
  digestAlg: typeof DIGEST_ALGORITHM;
  message: string;
}

/** Why an engine is `invalid`. */
export type EngineInvalidReason =
  /** `engine.sig` fails the strict pre-parser of `pack.sig` (see `malformed`). */
  | 'malformed'
  /** The ES256 signature does not verify with the trusted key. */
  | 'bad-signature'
  /** The signed payload is not an `engine.sig` v1 payload (a `pack.sig` payload among them). */
  | 'payload-invalid'
  /** The signed `iat` lies more than 5 minutes after the verifier's clock. */
  | 'issued-in-future'
  /** `engine.manifest.json` or `package.json` is missing or invalid. */
  | 'engine-invalid'
  /** The folder holds a root `pack.sig`, which the engine digest cannot cover. */
  | 'holds-pack-signature'
  /** `engine` / `engineVersion` differ from the manifest's `id` / `package.json` `version`. */
  | 'identity-mismatch'
  /** The folder's content no longer has the signed digest. */
  | 'digest-mismatch'
  /** The folder or its content cannot be read or digested. */
  | 'engine-unreadable';

export interface EngineInvalid {
  kind: 'invalid';
  reason: EngineInvalidReason;
  message: string;
  malformed?: MalformedReason;
  kid?: string;
  engine?: string;
  engineVersion?: string;
  digest?: string;
  iat?: Date;
  thumbprint?: string;
  /** `identity-mismatch`: what the folder says. */
  found?: EngineIdentity;
  /** `digest-mismatch`: the digest of the content as it is now. */
  actualDigest?: string;
  code?: string;
}

/** The outcome of `verifyEngine`: the kinds of `verifyPack` but `digest-unsupported`. */
export type EngineVerification =
  | EngineVerified
  | EngineInvalid
  | PackUnsigned
  | PackUntrustedKey
  | PackNoTrustRoot
  | PackTrustRootUnavailable;
