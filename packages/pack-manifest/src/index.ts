export { formatManifestIssue, isPackManifestError, PackManifestError } from './errors.js';
export type { ManifestIssue, PackManifestErrorCode, PackManifestErrorOptions } from './errors.js';
export { DEFAULT_MANIFEST_MAX_BYTES, loadPackManifest, parsePackManifest } from './load.js';
export type { LoadedManifest, LoadManifestOptions, ParseManifestOptions } from './load.js';
export {
  AGENT_API_VERSION,
  AGENT_KIND,
  AgentManifestSchema,
  agentManifestJsonSchema,
  AgentMetadataSchema,
  AgentSpecSchema,
  FILE_ACCESS_LEVELS,
  MANIFEST_FILE,
} from './schema.js';
export {
  isPackName,
  isSemver,
  PACK_NAME_MAX_LENGTH,
  PACK_NAME_PATTERN,
  SEMVER_PATTERN,
} from './names.js';
export type { AgentManifest, AgentMetadata, AgentSpec, FileAccess } from './schema.js';
export { packwardenHome, readPackwardenEnv } from './env.js';
export type { Env } from './env.js';
export {
  CURRENT_FILE,
  listInstalledPacks,
  looksLikePath,
  readCurrentVersion,
  resolvePack,
  WORKSPACE_AGENTS_DIR,
} from './resolve.js';
export type {
  InstalledPack,
  ListInstalledPacksOptions,
  PackSource,
  ResolvedPack,
  ResolvePackOptions,
} from './resolve.js';
