// Where an installed engine is, without the engines themselves (no zod, no engine code): the
// loader uses it, and `pack verify --installed` imports it alone (installed-entry.ts). Importing
// the whole package from the CLI for it made every sandbox boot run the claude and codex engine
// modules too (apps/cli/test/startup.test.ts).
// Synchronous calls: a sandbox boot makes them once each, where a trip through the thread pool
// cost more than the call (issue 14).
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { readBoundedFile } from '@packwarden/pack-manifest/fs';
import { CURRENT_FILE, isSemver } from '@packwarden/pack-manifest/resolve';
import { CUSTOM_ENGINE_MANIFEST_FILE, ENGINE_ID_PATTERN } from './engine-files.js';

/** An engine installed in `<home>/engines/<id>/` (`loadPackEngine`'s `EngineSource`). */
export interface InstalledEngineSource {
  kind: 'installed';
  id: string;
  folder: string;
  /** The version folder `current.txt` named; absent for `<home>/engines/<id>/` itself. */
  version?: string;
}

/** `dir` holds `engine.manifest.json` as a regular file. */
export async function isEngineFolder(dir: string): Promise<boolean> {
  try {
    return lstatSync(join(dir, CUSTOM_ENGINE_MANIFEST_FILE)).isFile();
  } catch {
    return false;
  }
}

/**
 * The version `<root>/current.txt` names, when it is a semantic version (never a path: a value
 * with `/` or `..` is not a version and is ignored, so nothing outside `<root>` is ever looked at).
 */
function installedVersion(root: string): string | undefined {
  // A regular file of at most 512 bytes, never through a symlink.
  const read = readBoundedFile(join(root, CURRENT_FILE), 512);
  if (read.kind !== 'read') return undefined;
  const version = read.bytes.toString('utf8').trim();
  return isSemver(version) ? version : undefined;
}

/**
 * Where `loadPackEngine` looks for an installed engine `id` after the pack's own `engines/<id>/`,
 * in its order: `<home>/engines/<id>/` itself, then the version its `current.txt` names.
 */
export async function installedEngineCandidates(
  home: string,
  id: string,
): Promise<InstalledEngineSource[]> {
  const root = join(home, 'engines', id);
  const current = installedVersion(root);
  return [
    { kind: 'installed', id, folder: root },
    ...(current === undefined
      ? []
      : [{ kind: 'installed' as const, id, folder: join(root, current), version: current }]),
  ];
}

/**
 * The installed engine `loadPackEngine` loads for `id` when the pack has no `engines/<id>/` of
 * its own: the first of its installed candidates that holds `engine.manifest.json`, or
 * `undefined`. `pack verify --installed` checks this folder against the lockfile, so that what
 * it checks is what runs. An `id` that is not an engine id (`ENGINE_ID_PATTERN`: no `/`, no
 * leading `.`) finds nothing: no path outside `<home>/engines/` is ever looked at.
 */
export async function findInstalledEngine(
  home: string,
  id: string,
): Promise<InstalledEngineSource | undefined> {
  if (typeof id !== 'string' || !ENGINE_ID_PATTERN.test(id)) return undefined;
  for (const source of await installedEngineCandidates(home, id)) {
    if (await isEngineFolder(source.folder)) return source;
  }
  return undefined;
}
