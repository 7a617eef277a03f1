import {
  narrowerFileAccess,
  toEngineFileAccess,
  type EngineFileAccess,
  type FileAccess as WireFileAccess,
} from '@packwarden/runner-host';

/**
 * File access an engine is given for one turn, in the pack's vocabulary (`agent.yaml`
 * `spec.permissions.fileAccess`) plus `none`, which only a driver can ask for: runner-host's
 * `EngineFileAccess` (its README "File access").
 */
export type TurnFileAccess = EngineFileAccess;

/** The levels a pack may declare in `spec.permissions.fileAccess`. */
export type DeclaredFileAccess = Exclude<TurnFileAccess, 'none'>;

/** What a pack that declares nothing gets: reading its workspace, nothing more. */
export const DEFAULT_DECLARED_FILE_ACCESS: DeclaredFileAccess = 'read-only';

/**
 * The file access of one turn. The pack's declaration is a ceiling: a run frame's permissions
 * may narrow it, never widen it, and a frame without permissions gets exactly the declaration
 * (`read-only` when the pack declares none).
 */
export function effectiveFileAccess(
  requested: WireFileAccess | undefined,
  declared: DeclaredFileAccess | undefined,
): TurnFileAccess {
  const ceiling = declared ?? DEFAULT_DECLARED_FILE_ACCESS;
  if (requested === undefined) return ceiling;
  return narrowerFileAccess(toEngineFileAccess(requested), ceiling);
}
