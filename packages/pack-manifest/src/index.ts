export { formatManifestIssue } from './errors.js';
export type { ManifestIssue, PackManifestErrorOptions } from './errors.js';
export { DEFAULT_MANIFEST_MAX_BYTES, loadPackManifest, parsePackManifest } from './load.js';
export type { LoadedManifest, LoadManifestOptions, ParseManifestOptions } from './load.js';
export {
  MANIFEST_MAX_COLLECTION_ENTRIES,
  MANIFEST_MAX_NESTING,
  MANIFEST_MAX_TOTAL_ENTRIES,
} from './nesting.js';
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
export { PACK_NAME_MAX_LENGTH, PACK_NAME_PATTERN, SEMVER_PATTERN } from './names.js';
export type { AgentManifest, AgentMetadata, AgentSpec, FileAccess } from './schema.js';
// Everything the light `./resolve` entry point offers is part of the main entry too.
export * from './resolve-entry.js';
