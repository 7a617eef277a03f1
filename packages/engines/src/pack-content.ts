// Synchronous file system calls: these are small reads at engine load, where each trip through
// the thread pool cost more than the call (issue 14; safe-fs.ts, readFileInside).
import { lstatSync, readdirSync, realpathSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { AgentManifest } from '@packwarden/pack-manifest';
import { typedEntry } from '@packwarden/pack-manifest/fs';
import { MCP_LIMITS, parseMcpConfig, type McpServerConfig } from './mcp-servers.js';
import { isInside, readFileInside, realpathOrUndefined } from './safe-fs.js';

/**
 * What a custom engine's host takes from the pack (the verified copy) once, at load: the
 * system prompt, the rules files, the skill folders and the MCP servers. Everything is read
 * inside the pack (a symlink out of it is ignored) and bounded by PACK_CONTENT_LIMITS.
 */
export interface PackContent {
  /** The pack folder, symlinks resolved. */
  readonly packDir?: string;
  /** `spec.prompts.system`, its text. */
  readonly systemPrompt?: string;
  /** Its path inside the pack. */
  readonly systemPromptPath?: string;
  /** `spec.prompts.rules`, each as file name and text. */
  readonly rules: readonly {
    readonly name: string;
    readonly path: string;
    readonly text: string;
  }[];
  /**
   * Skill folders: `spec.skills`, or each folder of `<pack>/skills/` when it lists none. Only
   * folders that hold a file or a symlink count: folders are not digest entries (pack-digest
   * SPEC.md, rule 2), so an empty one could be added to a signed pack unnoticed.
   */
  readonly skills: readonly { readonly name: string; readonly dir: string }[];
  /** The pack's own `skills/` folder, when it has one that holds a file or a symlink. */
  readonly skillsRoot?: string;
  /** MCP servers from the files `spec.mcp` names, in file order (the first name wins). */
  readonly mcpServers: Readonly<Record<string, McpServerConfig>>;
  /** What could not be used, for the embedder's log. */
  readonly warnings: readonly string[];
}

export const PACK_CONTENT_LIMITS = Object.freeze({
  /** Bytes of the system prompt and of each rules file. */
  maxPromptBytes: 256 * 1024,
  /** Rules files and skill folders. */
  maxRules: 100,
  maxSkills: 100,
  /** Folders and entries looked at to find a file in a skill folder ({@link holdsContent}). */
  maxEmptyEntries: 1_000,
});

export const EMPTY_PACK_CONTENT: PackContent = Object.freeze({
  rules: Object.freeze([]),
  skills: Object.freeze([]),
  mcpServers: Object.freeze({}),
  warnings: Object.freeze([]),
});

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true });

function decode(data: Buffer | undefined): string | undefined {
  if (data === undefined) return undefined;
  try {
    return fatalUtf8.decode(data);
  } catch {
    return undefined;
  }
}

function directoryInside(root: string, path: string): string | undefined {
  const real = realpathOrUndefined(path);
  if (real === undefined || !isInside(root, real)) return undefined;
  return lstatSync(real).isDirectory() ? real : undefined;
}

/**
 * Whether the folder `dir` holds a regular file or a symlink at any depth: what the pack digest
 * covers (pack-digest SPEC.md, rule 2: folders are not entries, so an empty folder changes
 * nothing and may be added to a signed pack). Looks at {@link PACK_CONTENT_LIMITS}
 * `.maxEmptyEntries` entries at most, and says no past them, or when a folder cannot be read.
 */
export async function holdsContent(dir: string): Promise<boolean> {
  const pending = [dir];
  let seen = 0;
  while (pending.length > 0) {
    const folder = pending.pop()!;
    let entries;
    try {
      entries = readdirSync(folder, { withFileTypes: true });
    } catch {
      return false;
    }
    for (const dirent of entries) {
      seen += 1;
      if (seen > PACK_CONTENT_LIMITS.maxEmptyEntries) return false;
      // A type readdir left out (DT_UNKNOWN) comes from lstat: an empty folder there is no file.
      let entry;
      try {
        entry = typedEntry(folder, dirent);
      } catch {
        return false;
      }
      if (entry.isDirectory()) pending.push(join(folder, entry.name));
      else return true;
    }
  }
  return false;
}

function mcpFiles(spec: Record<string, unknown>): string[] {
  const mcp = spec.mcp;
  const entries = Array.isArray(mcp) ? mcp : mcp !== undefined ? [mcp] : [];
  const files: string[] = [];
  for (const entry of entries) {
    if (typeof entry === 'string') files.push(entry);
    else if (entry !== null && typeof entry === 'object') {
      const config = (entry as { config?: unknown }).config;
      if (typeof config === 'string') files.push(config);
    }
  }
  return files;
}

/** Reads what the pack at `packDir` (manifest `manifest`) gives its custom engine. */
export async function readPackContent(
  packDir: string,
  manifest: AgentManifest,
): Promise<PackContent> {
  const root = realpathSync.native(packDir);
  const spec = manifest.spec as Record<string, unknown> & AgentManifest['spec'];
  const warnings: string[] = [];

  let systemPrompt: string | undefined;
  let systemPromptPath: string | undefined;
  const declaredPrompt = spec.prompts?.system;
  if (declaredPrompt !== undefined) {
    const path = join(root, declaredPrompt);
    systemPrompt = decode(await readFileInside(root, path, PACK_CONTENT_LIMITS.maxPromptBytes));
    if (systemPrompt === undefined)
      warnings.push(`spec.prompts.system ${declaredPrompt}: unreadable, outside the pack or large`);
    else systemPromptPath = realpathSync.native(path);
  }

  const rules: { name: string; path: string; text: string }[] = [];
  for (const declared of (spec.prompts?.rules ?? []).slice(0, PACK_CONTENT_LIMITS.maxRules)) {
    const path = join(root, declared);
    const text = decode(await readFileInside(root, path, PACK_CONTENT_LIMITS.maxPromptBytes));
    if (text === undefined) warnings.push(`spec.prompts.rules ${declared}: not used`);
    else rules.push({ name: basename(declared), path: realpathSync.native(path), text });
  }

  const skills: { name: string; dir: string }[] = [];
  const skillsFolder = directoryInside(root, join(root, 'skills'));
  const skillsRoot =
    skillsFolder !== undefined && (await holdsContent(skillsFolder)) ? skillsFolder : undefined;
  const declaredSkills = (spec.skills ?? []).map((entry) =>
    typeof entry === 'string' ? entry : entry.path,
  );
  const candidates =
    declaredSkills.length > 0
      ? declaredSkills.map((path) => join(root, path))
      : skillsRoot !== undefined
        ? readdirSync(skillsRoot)
            .sort()
            .map((name) => join(skillsRoot, name))
        : [];
  for (const candidate of candidates.slice(0, PACK_CONTENT_LIMITS.maxSkills)) {
    const dir = directoryInside(root, candidate);
    if (dir === undefined) warnings.push(`skill ${candidate}: not a folder inside the pack`);
    else if (!(await holdsContent(dir)))
      warnings.push(`skill ${candidate}: holds no file (an empty folder is not pack content)`);
    else if (!skills.some((skill) => skill.name === basename(dir)))
      skills.push({ name: basename(dir), dir });
  }

  const mcpServers: Record<string, McpServerConfig> = {};
  for (const file of mcpFiles(spec).slice(0, MCP_LIMITS.maxFiles)) {
    const text = decode(await readFileInside(root, join(root, file), MCP_LIMITS.maxFileBytes));
    let json: unknown;
    try {
      json = text === undefined ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    const parsed = json === undefined ? { issue: 'unreadable or not JSON' } : parseMcpConfig(json);
    if ('issue' in parsed) {
      warnings.push(`MCP configuration ${file}: ${parsed.issue}`);
      continue;
    }
    for (const [name, server] of Object.entries(parsed.servers)) {
      if (Object.keys(mcpServers).length >= MCP_LIMITS.maxServers) break;
      if (!Object.hasOwn(mcpServers, name)) mcpServers[name] = server;
    }
  }

  return {
    packDir: root,
    ...(systemPrompt !== undefined ? { systemPrompt } : {}),
    ...(systemPromptPath !== undefined ? { systemPromptPath } : {}),
    rules,
    skills,
    ...(skillsRoot !== undefined ? { skillsRoot } : {}),
    mcpServers,
    warnings,
  };
}
