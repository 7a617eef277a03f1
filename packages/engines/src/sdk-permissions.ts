import type { TurnFileAccess } from './permissions.js';

/** Claude Code's built-in tools that only read the workspace. */
export const CLAUDE_READ_TOOLS: readonly string[] = Object.freeze(['Read', 'Glob', 'Grep']);
/** …plus those that edit files (no `Bash`: a shell is not confined to the workspace). */
export const CLAUDE_WRITE_TOOLS: readonly string[] = Object.freeze([
  ...CLAUDE_READ_TOOLS,
  'Edit',
  'Write',
  'NotebookEdit',
]);

/** The Claude Agent SDK options a turn's file access becomes. */
export interface ClaudePermissionOptions {
  permissionMode: 'dontAsk' | 'acceptEdits' | 'bypassPermissions';
  tools: string[] | { type: 'preset'; preset: 'claude_code' };
  allowedTools: string[];
  allowDangerouslySkipPermissions?: boolean;
}

/**
 * `none`: no tools at all; `read-only`: the read tools, everything else denied (`dontAsk`);
 * `workspace-write`: the read and edit tools, edits accepted (`acceptEdits`), the rest denied
 * (no one can answer a permission prompt in a sandbox); `full`: every default tool, no checks
 * (`bypassPermissions`).
 */
export function claudePermissions(fileAccess: TurnFileAccess): ClaudePermissionOptions {
  switch (fileAccess) {
    case 'none':
      return { permissionMode: 'dontAsk', tools: [], allowedTools: [] };
    case 'read-only':
      return {
        permissionMode: 'dontAsk',
        tools: [...CLAUDE_READ_TOOLS],
        allowedTools: [...CLAUDE_READ_TOOLS],
      };
    case 'workspace-write':
      return {
        permissionMode: 'acceptEdits',
        tools: [...CLAUDE_WRITE_TOOLS],
        allowedTools: [...CLAUDE_WRITE_TOOLS],
      };
    case 'full':
      return {
        permissionMode: 'bypassPermissions',
        tools: { type: 'preset', preset: 'claude_code' },
        allowedTools: [],
        allowDangerouslySkipPermissions: true,
      };
  }
}

/** Codex's `--sandbox` modes. */
export type CodexSandboxMode = 'read-only' | 'workspace-write' | 'danger-full-access';

/**
 * `read-only` / `workspace-write` / `full` → Codex's `read-only` / `workspace-write` /
 * `danger-full-access`. Codex has no mode without file access, so `none` is `undefined`: the
 * engine refuses such a turn rather than widen it.
 */
export function codexSandboxMode(fileAccess: TurnFileAccess): CodexSandboxMode | undefined {
  switch (fileAccess) {
    case 'none':
      return undefined;
    case 'read-only':
      return 'read-only';
    case 'workspace-write':
      return 'workspace-write';
    case 'full':
      return 'danger-full-access';
  }
}
