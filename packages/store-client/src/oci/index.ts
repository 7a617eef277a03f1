export { parseAuthChallenge } from './challenge.js';
export type { AuthChallenge } from './challenge.js';
export type { OciClientOptions } from './client.js';
export { dockerConfigPath, readDockerCredentials } from './docker-config.js';
export type { DockerConfigOptions, RegistryCredentials } from './docker-config.js';
export type { OciErrorCode } from './errors.js';
export { DEFAULT_OCI_LIMITS } from './limits.js';
export type { OciLimits } from './limits.js';
export {
  ANNOTATION_DESCRIPTION,
  ANNOTATION_PACK_DIGEST,
  ANNOTATION_PACK_SIGNER,
  ANNOTATION_TITLE,
  ANNOTATION_VERSION,
  buildPackManifest,
  canonicalJson,
  OCI_EMPTY_DIGEST,
  OCI_EMPTY_MEDIA_TYPE,
  OCI_MANIFEST_MEDIA_TYPE,
  PACK_ARTIFACT_TYPE,
  PACK_LAYER_MEDIA_TYPE,
  parsePackManifest,
} from './manifest.js';
export type { OciDescriptor, PackArtifactMeta, PackManifest } from './manifest.js';
export {
  highestSemverTag,
  listOciTags,
  pullPackArtifact,
  resolvePackArtifact,
  withPulledPackArtifact,
} from './pull.js';
export type {
  PullPackArtifactOptions,
  PullPackArtifactResult,
  ResolvedPackArtifact,
} from './pull.js';
export { pushPackFolder } from './push-pack.js';
export type { PushPackFolderResult } from './push-pack.js';
export { pushPackArtifact } from './push.js';
export type { BlobUploadMethod, PushPackArtifactOptions, PushPackArtifactResult } from './push.js';
export {
  formatOciReference,
  isOciReference,
  OCI_DIGEST_PATTERN,
  OCI_REPOSITORY_PATTERN,
  OCI_TAG_PATTERN,
  parseOciReference,
} from './reference.js';
export type { OciReference, ParseOciReferenceOptions } from './reference.js';
