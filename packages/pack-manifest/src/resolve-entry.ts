// `@packwarden/pack-manifest/resolve`: finding and listing packs without loading yaml or zod,
// for tools that start fast and parse manifests only when they must.
export { packwardenHome, readPackwardenEnv, readPackwardenFlag } from './env.js';
export type { Env } from './env.js';
export { isPackManifestError, PackManifestError } from './errors.js';
export type { PackManifestErrorCode } from './errors.js';
export { isPackName, isSemver } from './names.js';
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
