// What `@packwarden/store-client/store` offers (references, errors, `openStore` and its types),
// listed once there.
export * from './store-entry.js';
export { DEFAULT_EXTRACT_LIMITS } from './limits.js';
export type { ExtractLimits } from './limits.js';
export { extractArchive, normalizeMode } from './extract.js';
export type { ExtractedEntry, ExtractOptions, ExtractResult } from './extract.js';
export { foldName } from './archive-path.js';
export {
  STATIC_STORE_FORMAT,
  STORE_INDEX_LIMITS,
  StaticStoreIndexSchema,
  staticStoreIndexJsonSchema,
} from './index-schema.js';
export type { StaticStoreIndex, StaticStoreVersion } from './index-schema.js';
export { installPack } from './install.js';
export type {
  InstallPackOptions,
  InstallPhase,
  InstallProgress,
  InstallResult,
} from './install.js';
export { buildStaticStore, REPRODUCIBLE_MTIME } from './build.js';
export type { BuildStaticStoreOptions, BuildStaticStoreResult, BuiltPack } from './build.js';
export { isLoopbackHost } from './url-policy.js';
// OCI registries (OCI.md): push, pull, resolve, tags, auth.
export * from './oci/index.js';
export { exportPack, openPackArchive } from './archive-file.js';
export type { ExportedPack, ExportPackOptions, OpenPackArchiveOptions } from './archive-file.js';
export {
  assertLockEntryMatches,
  formatLockfile,
  LOCKFILE_LIMITS,
  LOCKFILE_VERSION,
  parseLockfile,
  readLockfile,
  writeLockfile,
} from './lockfile.js';
export type { LockEntry, Lockfile, LockObservation } from './lockfile.js';
export { STORE_CLIENT_ENV_VARIABLES } from './env-vars.js';
