export {
  FILE_LIST_MAX_ENTRIES,
  KID_MAX_LENGTH,
  PACK_SIGNATURE_ALG,
  PACK_SIGNATURE_FILE,
  PACK_SIGNATURE_IAT_RANGE,
  PACK_SIGNATURE_MAX_CLOCK_SKEW_SECONDS,
  PACK_SIGNATURE_MAX_BYTES,
} from './constants.js';
export { computePackDigest } from '@packwarden/pack-digest';
export type { PackDigest, PackDigestEntry, PackManifestDiff } from '@packwarden/pack-digest';
export { isPackSignatureError, PackSignatureError } from './errors.js';
export type { PackSignatureErrorCode, PackSignatureErrorOptions } from './errors.js';
export { generateKeypair } from './keypair.js';
export type { GeneratedKeypair, GenerateKeypairOptions, PackSigningPublicJwk } from './keypair.js';
export { kidProblem } from '@packwarden/pack-manifest/resolve';
export { signPack } from './sign.js';
export type { FileListOmission, SignedPack, SignedPackPayload, SignPackOptions } from './sign.js';
export { parsePackSignature, readPackSignature } from './read-signature.js';
export type { ReadPackSignature } from './read-signature.js';
export type { MalformedReason, PackSignatureHeader } from './strict-jws.js';
export { PackSignaturePayloadSchema } from './payload.js';
export type { PackSignaturePayload } from './payload.js';
export type { KeySelection, KeySelector } from './key-selection.js';
export { verifyPack } from './verify.js';
export type { VerifyPackOptions } from './verify.js';
export { verifyPacks } from './verify-packs.js';
export type {
  PackBatchOutcome,
  PackBatchVerification,
  VerifyPacksOptions,
} from './verify-packs.js';
export {
  KEY_FILE_MAX_BYTES,
  readPrivateKeyFile,
  writePrivateKeyFile,
  writePublicKeysFile,
} from './key-file.js';
export type { WriteKeyFileOptions } from './key-file.js';
export { PACK_VERIFICATION_EXIT_CODES } from './exit-codes.js';
export type {
  PackDigestUnsupported,
  PackInvalid,
  PackInvalidReason,
  PackNoTrustRoot,
  PackSignatureClaims,
  PackTrustRootUnavailable,
  PackUnsigned,
  PackUntrustedKey,
  PackVerification,
  PackVerificationKind,
  PackVerified,
} from './results.js';
export { describePackRefusal } from './refusals.js';
export type { PackRefusalDescription } from './refusals.js';
export { ENGINE_MANIFEST_FILE, readEngineIdentity } from './engine-identity.js';
export type { EngineIdentity, EngineIdentityProblem } from './engine-identity.js';
export {
  ENGINE_SIGNATURE_FILE,
  EngineSignaturePayloadSchema,
  signEngine,
  verifyEngine,
} from './engine-signature.js';
export type {
  EngineSignaturePayload,
  SignedEngine,
  SignEngineOptions,
  VerifyEngineOptions,
} from './engine-signature.js';
export type {
  EngineInvalid,
  EngineInvalidReason,
  EngineSignatureClaims,
  EngineVerification,
  EngineVerified,
} from './results.js';
