// `@packwarden/pack-manifest/resolve`: the light entry point, without yaml or zod, for tools that
// start fast and parse manifests only when they must: finding and listing packs, environment and
// home lookup, the strict JSON parser, the terminal escaper.
export {
  lookupPackwardenEnv,
  packwardenHome,
  readPackwardenEnv,
  readPackwardenFlag,
} from './env.js';
export type { Env, PackwardenEnvValue } from './env.js';
export { PACK_MANIFEST_ENV_VARIABLES } from './env-vars.js';
export type { PackwardenEnvVariable } from './env-vars.js';
export {
  FIND_PACKS_MAX_DEPTH,
  FIND_PACKS_MAX_FOLDERS,
  FIND_PACKS_MAX_PACKS,
  findPackFolders,
} from './find-packs.js';
export type { FindPackFoldersOptions } from './find-packs.js';
export { KID_MAX_LENGTH, kidProblem } from './kid.js';
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
export {
  isJsonObject,
  parseStrictJson,
  STRICT_JSON_MAX_BYTES,
  STRICT_JSON_MAX_DEPTH,
} from './strict-json.js';
export type { StrictJsonOptions } from './strict-json.js';
export { terminalSafe } from './terminal-safe.js';
export type { TerminalSafeOptions } from './terminal-safe.js';
