/** The first line of every v1 manifest, and the value of `digestAlg` in a packwarden `pack.sig`. */
export const DIGEST_ALGORITHM = 'packwarden-digest/1';

/** The one path the digest leaves out: the signature at the pack root. */
export const DIGEST_EXCLUDED_PATH = 'pack.sig';

export interface PackDigestLimits {
  /** Files and symlinks counted together. Default 200,000. */
  maxEntries: number;
  /**
   * Folders below the root. Default 100,000. Folders are not entries (an empty one changes no
   * digest), so `maxEntries` does not count them: without this bound a tree of millions of empty
   * folders is walked to the end.
   */
  maxFolders: number;
  /** Folder nesting below the root. Default 64. */
  maxDepth: number;
  /** UTF-8 bytes of one pack-relative path. Default 4,096. */
  maxPathBytes: number;
  /**
   * Bytes of file content, all files together. Default 4 GiB. Each file's size is judged from
   * the `fstat` it gets before it is read, so a pack over the bound (a sparse file of a terabyte
   * costs no disk space) is refused unread instead of keeping the digest busy for hours.
   */
  maxTotalBytes: number;
}

export const DEFAULT_DIGEST_LIMITS: Readonly<PackDigestLimits> = Object.freeze({
  maxEntries: 200_000,
  maxFolders: 100_000,
  maxDepth: 64,
  maxPathBytes: 4096,
  maxTotalBytes: 4 * 1024 * 1024 * 1024,
});
