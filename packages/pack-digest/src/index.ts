export { DEFAULT_DIGEST_LIMITS, DIGEST_ALGORITHM, DIGEST_EXCLUDED_PATH } from './constants.js';
export type { PackDigestLimits } from './constants.js';
export { computePackDigest } from './digest.js';
export type { ComputePackDigestOptions, PackDigest, PackDigestEntry } from './digest.js';
export { PackDigestError, isPackDigestError } from './errors.js';
export type { PackDigestErrorCode, PackDigestErrorOptions, UnsupportedFileType } from './errors.js';
export {
  compareManifestPaths,
  digestManifest,
  digestManifestLines,
  formatManifest,
  formatManifestLine,
  manifestPathProblem,
  parseManifestLine,
  parseManifestLines,
} from './manifest.js';
export type { PackEntryMode, PackManifestEntry } from './manifest.js';
export { diffPackManifests, isEmptyManifestDiff } from './manifest-diff.js';
export type { PackManifestDiff } from './manifest-diff.js';
