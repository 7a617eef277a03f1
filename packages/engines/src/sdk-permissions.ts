import type { TurnFileAccess } from './permissions.js';

/** Claude Code's built-in tools that only read files. */
export const CLAUDE_READ_TOOLS: readonly string[] = Object.freeze(['Read', 'Glob', 'Grep']);
/** …plus those that edit files. */
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
  disallowedTools?: string[];
  allowDangerouslySkipPermissions?: boolean;
}

/** Where a turn's tools may reach, for path-scoped permission rules. */
export interface ClaudeScope {
  /** The workspace (absolute). */
  workspace: string;
  /** The run's `additionalDirectories` (absolute), readable and writable like the workspace. */
  additionalDirectories?: readonly string[];
  /**
   * Whether the CLI runs behind packwarden's walls and they enforce writes (a `CommandWrapper`
   * with `confinedWrites`): only then does `workspace-write` include `Bash`, because the walls,
   * not Claude Code, keep its commands in the workspace (engines README, "Shell commands").
   */
  confined?: boolean;
}

/**
 * A permission rule for everything under `dir`: Claude Code reads `//` as the filesystem root
 * (its permission rule syntax), so `/work/ws` becomes `Tool(//work/ws/**)`.
 */
export function pathRule(tool: string, dir: string): string {
  const trimmed = dir.replace(/\/+$/, '');
  return `${tool}(/${trimmed}/**)`;
}

/**
 * `none`: no tools at all; `read-only`: the read tools, each allowed only under the workspace
 * (and the run's additional directories), everything else denied (`dontAsk`: no one can answer
 * a permission prompt in a sandbox); `workspace-write`: the read and edit tools, path-scoped the
 * same way (a bare `Edit` or `Write` rule would allow any path), plus `Bash` when the CLI is
 * confined; `full`: every default tool, no checks (`bypassPermissions`).
 */
export function claudePermissions(
  fileAccess: TurnFileAccess,
  scope: ClaudeScope,
): ClaudePermissionOptions {
  const roots = [scope.workspace, ...(scope.additionalDirectories ?? [])];
  const readRules = roots.flatMap((root) => CLAUDE_READ_TOOLS.map((tool) => pathRule(tool, root)));
  switch (fileAccess) {
    case 'none':
      return { permissionMode: 'dontAsk', tools: [], allowedTools: [] };
    case 'read-only':
      return {
        permissionMode: 'dontAsk',
        tools: [...CLAUDE_READ_TOOLS],
        allowedTools: readRules,
      };
    case 'workspace-write': {
      const writeRules = roots.flatMap((root) =>
        ['Edit', 'Write', 'NotebookEdit'].map((tool) => pathRule(tool, root)),
      );
      const shell = scope.confined === true;
      return {
        permissionMode: 'dontAsk',
        tools: [...CLAUDE_WRITE_TOOLS, ...(shell ? ['Bash'] : [])],
        allowedTools: [...readRules, ...writeRules, ...(shell ? ['Bash'] : [])],
      };
    }
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
