// `@packwarden/pack-manifest/fs`: packwarden's file primitives, one home for every package (issue
// 13 item 6: one concept, one place). Node built-ins only, without yaml or zod, so the CLI and
// the light entry points load nothing else for them.
export { isAtomicWriteTemporary, removeStaleTemporaries, writeFileAtomic } from './atomic-write.js';
export type { WriteFileAtomicOptions } from './atomic-write.js';
export { readBoundedFile } from './read-bounded-file.js';
export { MAC_KEY_MIN_BYTES, readMacEntry, writeMacEntry } from './mac-entry.js';
export type { MacEntryFormat, MacEntryRead } from './mac-entry.js';
export { typedEntry, type TypedEntry } from './typed-entry.js';
export type { BoundedFile, ReadBoundedFileOptions } from './read-bounded-file.js';
export {
  errorCode,
  ownerOnlyFolderProblem,
  ownerOnlyProblem,
  prepareOwnerOnlyFolder,
  type OwnerOnlyFolder,
  type OwnerOnlyStats,
} from './owner-only.js';
