// Synchronous calls: an engine is loaded once per boot, where each trip through the thread pool
// cost more than the call (issue 14).
import { lstatSync, realpathSync } from 'node:fs';
import { extname, join, relative, isAbsolute, sep } from 'node:path';
import * as z from 'zod';
import { readBoundedFile } from '@packwarden/pack-manifest/fs';
import { CUSTOM_ENGINE_MANIFEST_FILE, ENGINE_ID_PATTERN } from './engine-files.js';
import { EngineError } from './errors.js';

export { CUSTOM_ENGINE_MANIFEST_FILE, ENGINE_ID_PATTERN };

/**
 * Bounds on `engine.manifest.json`, checked before the schema sees the document: the file comes
 * from a pack (or an installed engine) and is read by every boot, so its cost is capped.
 */
export const CUSTOM_ENGINE_MANIFEST_LIMITS = Object.freeze({
  /** Bytes of the file; anything larger is refused unread. */
  maxBytes: 64 * 1024,
  /** Object keys and array items, counted over the whole document. */
  maxEntries: 1024,
  /** Nesting of objects and arrays (the top-level object is depth 1). */
  maxDepth: 8,
});

/** `engine.manifest.json` is a small document; anything larger is refused unread. */
export const CUSTOM_ENGINE_MANIFEST_MAX_BYTES = CUSTOM_ENGINE_MANIFEST_LIMITS.maxBytes;

/** The shape of a variable name the manifest may ask the host to write (POSIX portable names). */
export const ENV_VAR_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * Variables the host never writes on a manifest's behalf, whatever it declares: each one changes
 * how the engine's process, the programs it starts, or their network and TLS behave (README,
 * "Custom engines": "Variables the host writes").
 */
const RESERVED_ENV_NAMES = new Set([
  'PATH',
  'HOME',
  'PWD',
  'OLDPWD',
  'SHELL',
  'USER',
  'LOGNAME',
  'TMPDIR',
  'TMP',
  'TEMP',
  'IFS',
  'ENV',
  'BASH_ENV',
  'CDPATH',
  'PS4',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
]);
const RESERVED_ENV_PREFIXES = ['LD_', 'DYLD_', 'NODE_', 'NPM_CONFIG_', 'PACKWARDEN_', 'BASH_FUNC_'];

/** Whether the host may write a variable of this name for a manifest (see RESERVED_ENV_NAMES). */
export function isWritableEnvName(name: string): boolean {
  if (!ENV_VAR_NAME_PATTERN.test(name)) return false;
  const upper = name.toUpperCase();
  if (RESERVED_ENV_NAMES.has(upper)) return false;
  return !RESERVED_ENV_PREFIXES.some((prefix) => upper.startsWith(prefix));
}

const envName = z.string().refine(isWritableEnvName, {
  message:
    'must be a variable name ([A-Za-z_][A-Za-z0-9_]*) that is not reserved (PATH, HOME, NODE_*, LD_*, PACKWARDEN_*, proxies, ...)',
});

/**
 * Folders and files the host lays into a workspace must stay plain, relative and out of the
 * places where a file is code or configuration for someone else: `.git` (hooks) and
 * `.packwarden` (the sandbox's own copy of the pack, docs/sandbox.md).
 */
function isSafeSegment(segment: string): boolean {
  if (segment === '' || segment === '.' || segment === '..' || segment.length > 255) return false;
  // eslint-disable-next-line no-control-regex
  if (/[\\/:\u0000-\u001f\u007f]/.test(segment)) return false;
  const lower = segment.toLowerCase();
  return lower !== '.git' && lower !== '.packwarden';
}

const syncDir = z
  .string()
  .max(512)
  .refine(
    (value) => {
      const segments = value.replace(/^\.\//, '').split('/');
      return segments.length <= 4 && segments.every(isSafeSegment);
    },
    {
      message:
        'must be a relative folder inside the workspace (at most 4 plain segments, no "..", not .git or .packwarden)',
    },
  );
const fileName = z.string().refine(isSafeSegment, {
  message: 'must be a plain file name (no "/", no "..")',
});

/**
 * AgentHippo Custom Engine V2 manifest, as the engines of the AgentHippo store write it
 * (`version`, `id`, `displayName`, `description`, `tags`, `entry`, `engineExport`, `homeEnvVar`,
 * `workspaceSync`, `promptInjection`, `model`). Keys starting with `_comment` are commentary;
 * unknown keys are kept (forward compatibility), within CUSTOM_ENGINE_MANIFEST_LIMITS.
 */
export const customEngineManifestSchema = z.looseObject({
  version: z.literal(2, { message: 'must be 2 (AgentHippo Custom Engine V2)' }),
  id: z.string().regex(ENGINE_ID_PATTERN, { message: 'must be an engine id such as "my-engine"' }),
  displayName: z.string().max(200).optional(),
  description: z.string().max(4000).optional(),
  tags: z.array(z.string().max(100)).max(64).optional(),
  entry: z.string().min(1).max(1024),
  /** The named export; absent or `"default"`: the module's default export. */
  engineExport: z
    .string()
    .regex(/^[A-Za-z_$][A-Za-z0-9_$]{0,127}$/, { message: 'must be a JavaScript export name' })
    .optional(),
  homeEnvVar: envName.optional(),
  workspaceSync: z
    .strictObject({
      enabled: z.boolean(),
      dir: syncDir,
      rulesFile: fileName.optional(),
      includeSkills: z.boolean().optional(),
      includeRules: z.boolean().optional(),
    })
    .optional(),
  promptInjection: z
    .strictObject({
      mode: z.enum(['message-suffix', 'env-only', 'none'], {
        message: 'must be "message-suffix", "env-only" or "none"',
      }),
    })
    .optional(),
  model: z
    .strictObject({
      defaultModel: z.string().min(1).max(200).optional(),
      apiKeyEnvVar: envName.optional(),
      baseUrlEnvVar: envName.optional(),
      openaiBaseUrlEnvVar: envName.optional(),
    })
    .optional(),
});
export type CustomEngineManifest = z.infer<typeof customEngineManifestSchema>;

export interface LoadedCustomEngineManifest {
  manifest: CustomEngineManifest;
  /** The engine folder, symlinks resolved. */
  dir: string;
  /** The entry module, resolved and checked to be a regular file inside `dir`. */
  entryPath: string;
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
}

function invalid(where: string, message: string, cause?: unknown): EngineError {
  return new EngineError(
    'ERR_ENGINE_MANIFEST_INVALID',
    `${where}: ${message}`,
    cause !== undefined ? { cause } : undefined,
  );
}

/** Refuses documents over the entry and depth bounds before any schema walks them. */
function checkBounds(json: unknown, where: string): void {
  let entries = 0;
  const stack: Array<{ value: unknown; depth: number }> = [{ value: json, depth: 1 }];
  while (stack.length > 0) {
    const { value, depth } = stack.pop() as { value: unknown; depth: number };
    if (value === null || typeof value !== 'object') continue;
    if (depth > CUSTOM_ENGINE_MANIFEST_LIMITS.maxDepth)
      throw invalid(where, `nested deeper than ${CUSTOM_ENGINE_MANIFEST_LIMITS.maxDepth} levels`);
    const children = Array.isArray(value) ? value : Object.values(value);
    entries += children.length;
    if (entries > CUSTOM_ENGINE_MANIFEST_LIMITS.maxEntries)
      throw invalid(where, `more than ${CUSTOM_ENGINE_MANIFEST_LIMITS.maxEntries} keys and items`);
    for (const child of children) stack.push({ value: child, depth: depth + 1 });
  }
}

/**
 * Parses the text of an `engine.manifest.json`: JSON, then the bounds, then the schema. Throws
 * `EngineError` `ERR_ENGINE_MANIFEST_INVALID` (naming the field) for anything else; never
 * another error. `where` prefixes messages (the file's path).
 */
export function parseCustomEngineManifest(
  text: string,
  where = CUSTOM_ENGINE_MANIFEST_FILE,
): CustomEngineManifest {
  if (Buffer.byteLength(text, 'utf8') > CUSTOM_ENGINE_MANIFEST_LIMITS.maxBytes)
    throw invalid(where, `larger than ${CUSTOM_ENGINE_MANIFEST_LIMITS.maxBytes} bytes`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw invalid(where, `not JSON: ${(cause as Error).message}`, cause);
  }
  checkBounds(json, where);
  const parsed = customEngineManifestSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .slice(0, 10)
      .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
      .join('; ');
    throw invalid(where, issues);
  }
  const manifest = parsed.data;
  const model = manifest.model;
  const written = [
    manifest.homeEnvVar,
    model?.apiKeyEnvVar,
    model?.baseUrlEnvVar,
    model?.openaiBaseUrlEnvVar,
  ].filter((name): name is string => name !== undefined);
  // One variable cannot hold two values: a key written over the home folder (or the reverse)
  // would hand the engine the wrong thing silently.
  if (new Set(written).size !== written.length)
    throw invalid(
      where,
      'homeEnvVar, model.apiKeyEnvVar, model.baseUrlEnvVar and model.openaiBaseUrlEnvVar must name different variables (baseUrlEnvVar and openaiBaseUrlEnvVar may not coincide either)',
    );
  return manifest;
}

/** Reads and validates `<dir>/engine.manifest.json` and locates its entry module. */
export async function loadCustomEngineManifest(dir: string): Promise<LoadedCustomEngineManifest> {
  let root: string;
  try {
    root = realpathSync.native(dir);
  } catch (cause) {
    throw invalid(dir, `no engine folder: ${(cause as Error).message}`, cause);
  }
  const file = join(root, CUSTOM_ENGINE_MANIFEST_FILE);
  let text: string;
  try {
    // Never through a symlink, and at most maxBytes even when the file grows meanwhile.
    const read = readBoundedFile(file, CUSTOM_ENGINE_MANIFEST_LIMITS.maxBytes);
    if (read.kind === 'absent' || read.kind === 'failed') throw read.cause;
    if (read.kind === 'symlink' || read.kind === 'not-regular-file')
      throw new Error('not a regular file');
    if (read.kind !== 'read')
      throw new Error(`larger than ${CUSTOM_ENGINE_MANIFEST_LIMITS.maxBytes} bytes`);
    text = new TextDecoder('utf-8', { fatal: true }).decode(read.bytes);
  } catch (cause) {
    throw invalid(file, (cause as Error).message, cause);
  }
  const manifest = parseCustomEngineManifest(text, file);
  const declared = join(root, manifest.entry);
  if (isAbsolute(manifest.entry) || !inside(root, declared)) {
    throw new EngineError(
      'ERR_ENGINE_ENTRY_INVALID',
      `${file}: entry ${JSON.stringify(manifest.entry)} must be a path inside the engine folder`,
    );
  }
  let entryPath: string;
  try {
    entryPath = realpathSync.native(declared);
    if (!lstatSync(entryPath).isFile()) throw new Error('not a regular file');
  } catch (cause) {
    throw new EngineError(
      'ERR_ENGINE_ENTRY_INVALID',
      `${file}: entry ${JSON.stringify(manifest.entry)}: ${(cause as Error).message}`,
      { cause },
    );
  }
  // A symlink may not lead the entry out of the folder.
  if (!inside(root, entryPath)) {
    throw new EngineError(
      'ERR_ENGINE_ENTRY_INVALID',
      `${file}: entry ${JSON.stringify(manifest.entry)} resolves outside the engine folder`,
    );
  }
  if (!['.mjs', '.js'].includes(extname(entryPath))) {
    throw new EngineError(
      'ERR_ENGINE_ENTRY_INVALID',
      `${file}: entry ${JSON.stringify(manifest.entry)} must be an ES module (.mjs or .js)`,
    );
  }
  return { manifest, dir: root, entryPath };
}
