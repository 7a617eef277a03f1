/** Every bound the sandbox service applies, in one place, each with its unit. */
export const SANDBOX_LIMITS = Object.freeze({
  /** Entries (files, folders, symlinks) copied from a pack, in total. */
  maxPackEntries: 20_000,
  /** Bytes of regular files copied from a pack, in total (1 GiB). */
  maxPackBytes: 1024 * 1024 * 1024,
  /** Folder depth of a copied pack. */
  maxPackDepth: 64,
  /** Milliseconds the `run` driver waits for the sandbox to exit after `bye` before killing it. */
  exitTimeoutMs: 10_000,
});
