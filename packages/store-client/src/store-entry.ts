// `@packwarden/store-client/store`: what `store list`, `search` and `info` need, and nothing that
// installs. This module graph never loads jose, the signature verifier, the tar reader or
// writer, gunzip or the extractor (test/store-entry.test.ts checks the built entry).
export {
  ARTIFACT_TYPES,
  formatArtifactRef,
  isSlug,
  normalizeArtifactType,
  parseArtifactRef,
  SLUG_PATTERN,
} from './refs.js';
export type { ArtifactRef, ArtifactType } from './refs.js';
export { isStoreError, StoreError } from './errors.js';
export type { StoreErrorCode, StoreErrorOptions } from './errors.js';
export {
  AGENTHIPPO_TYPE_DIRS,
  DEFAULT_GITHUB_API_URL,
  DEFAULT_STORE_REPO,
  DEFAULT_STORE_URL,
  openStore,
} from './store.js';
export type {
  ArtifactSource,
  Env,
  OpenStoreOptions,
  ResolvedArtifact,
  Store,
  StoreArtifact,
  StoreKind,
  StoreProblem,
} from './store.js';
