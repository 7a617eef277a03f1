import { compareManifestPaths, type PackManifestEntry } from './manifest.js';

export interface PackManifestDiff {
  /** In `actual`, not in `expected`. */
  added: string[];
  /** In `expected`, not in `actual`. */
  removed: string[];
  /** In both with different content (or a file that became a symlink, or back). */
  modified: string[];
  /** In both with the same content, only the execute bit differs. */
  modeChanged: string[];
}

/** What changed between two manifests, each list sorted like a manifest. */
export function diffPackManifests(
  expected: readonly PackManifestEntry[],
  actual: readonly PackManifestEntry[],
): PackManifestDiff {
  const before = new Map(expected.map((entry) => [entry.path, entry]));
  const diff: PackManifestDiff = { added: [], removed: [], modified: [], modeChanged: [] };
  const seen = new Set<string>();
  for (const entry of actual) {
    seen.add(entry.path);
    const old = before.get(entry.path);
    if (!old) diff.added.push(entry.path);
    else if (old.sha256 !== entry.sha256 || (old.mode === 'l') !== (entry.mode === 'l')) {
      diff.modified.push(entry.path);
    } else if (old.mode !== entry.mode) diff.modeChanged.push(entry.path);
  }
  for (const entry of expected) if (!seen.has(entry.path)) diff.removed.push(entry.path);
  for (const list of Object.values(diff)) list.sort(compareManifestPaths);
  return diff;
}

/** True when the diff lists no change at all. */
export function isEmptyManifestDiff(diff: PackManifestDiff): boolean {
  return (
    diff.added.length + diff.removed.length + diff.modified.length + diff.modeChanged.length === 0
  );
}
