import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CustomEngineManifest } from './custom-manifest.js';
import type { PackContent } from './pack-content.js';
import { UnsafePathError, holdDirNoFollow, writeFileNoFollow, type HeldDir } from './safe-fs.js';

/** The rules file's name when `workspaceSync.rulesFile` is absent (README: "workspaceSync"). */
export const DEFAULT_RULES_FILE = 'AGENTS.md';

export const WORKSPACE_SYNC_LIMITS = Object.freeze({
  /** Files copied per sync (rules plus every skill's files). */
  maxFiles: 2000,
  /** Bytes copied per sync. */
  maxBytes: 32 * 1024 * 1024,
  /** Folder depth inside one skill. */
  maxDepth: 16,
});

export interface SyncedPaths {
  rulesFilePath?: string;
  rulesDir?: string;
  skillsDir?: string;
}

interface Budget {
  files: number;
  bytes: number;
}

function spend(budget: Budget, bytes: number): void {
  budget.files += 1;
  budget.bytes += bytes;
  if (
    budget.files > WORKSPACE_SYNC_LIMITS.maxFiles ||
    budget.bytes > WORKSPACE_SYNC_LIMITS.maxBytes
  )
    throw new UnsafePathError(
      `the pack's rules and skills exceed ${WORKSPACE_SYNC_LIMITS.maxFiles} files or ${WORKSPACE_SYNC_LIMITS.maxBytes} bytes`,
    );
}

/**
 * Copies a skill folder of the (verified, read-only) pack; links in it are not copied. Each
 * destination folder is held open while its files are written (safe-fs.ts, HeldDir).
 */
async function copySkill(
  source: string,
  workspace: string,
  destSegments: string[],
  budget: Budget,
  depth = 0,
): Promise<void> {
  if (depth > WORKSPACE_SYNC_LIMITS.maxDepth)
    throw new UnsafePathError(`a skill nests deeper than ${WORKSPACE_SYNC_LIMITS.maxDepth}`);
  await withHeldDir(workspace, destSegments, async (dest) => {
    for (const name of (await readdir(source)).sort()) {
      const from = join(source, name);
      const info = await lstat(from);
      if (info.isDirectory()) {
        await copySkill(from, workspace, [...destSegments, name], budget, depth + 1);
      } else if (info.isFile()) {
        spend(budget, info.size);
        await writeFileNoFollow(dest, name, await readFile(from));
      }
    }
  });
}

/** Runs `use` with `<workspace>/<segments...>` held open, and releases it whatever happens. */
async function withHeldDir<T>(
  workspace: string,
  segments: readonly string[],
  use: (dir: HeldDir) => Promise<T>,
): Promise<T> {
  const dir = await holdDirNoFollow(workspace, segments);
  try {
    return await use(dir);
  } finally {
    await dir.close();
  }
}

/**
 * Lays the pack's rules and skills where the engine's own tool looks for them, as the engine's
 * `workspaceSync` asks: the system prompt as `<workspace>/<dir>/<rulesFile>`, `spec.prompts.rules`
 * files in `<dir>/rules/`, skills in `<dir>/skills/<name>/`. Only writes below `<dir>`, never
 * through a symlink, and never deletes anything (files it laid before are replaced in place).
 */
export async function syncWorkspace(
  workspaceRoot: string,
  sync: NonNullable<CustomEngineManifest['workspaceSync']>,
  content: PackContent,
): Promise<SyncedPaths> {
  const base = sync.dir.replace(/^\.\//, '').split('/');
  const budget: Budget = { files: 0, bytes: 0 };
  const paths: SyncedPaths = {};
  await withHeldDir(workspaceRoot, base, async (held) => {
    if (sync.includeRules !== false && content.systemPrompt !== undefined) {
      const rulesFile = sync.rulesFile ?? DEFAULT_RULES_FILE;
      spend(budget, Buffer.byteLength(content.systemPrompt));
      await writeFileNoFollow(held, rulesFile, content.systemPrompt);
      paths.rulesFilePath = join(held.path, rulesFile);
    }
  });
  if (sync.includeRules !== false && content.rules.length > 0) {
    paths.rulesDir = await withHeldDir(workspaceRoot, [...base, 'rules'], async (rulesDir) => {
      for (const rule of content.rules) {
        spend(budget, Buffer.byteLength(rule.text));
        await writeFileNoFollow(rulesDir, rule.name, rule.text);
      }
      return rulesDir.path;
    });
  }
  if (sync.includeSkills !== false && content.skills.length > 0) {
    paths.skillsDir = await withHeldDir(
      workspaceRoot,
      [...base, 'skills'],
      async (skills) => skills.path,
    );
    for (const skill of content.skills)
      await copySkill(skill.dir, workspaceRoot, [...base, 'skills', skill.name], budget);
  }
  return paths;
}
