import { lstat, readFile, realpath } from 'node:fs/promises';
import { extname, join, relative, isAbsolute, sep } from 'node:path';
import * as z from 'zod';
import { EngineError } from './errors.js';

export const CUSTOM_ENGINE_MANIFEST_FILE = 'engine.manifest.json';
/** `engine.manifest.json` is a small document; anything larger is refused unread. */
export const CUSTOM_ENGINE_MANIFEST_MAX_BYTES = 64 * 1024;

export const ENGINE_ID_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** AgentHippo Custom Engine V2 manifest. Unknown fields are kept (forward compatibility). */
export const customEngineManifestSchema = z.looseObject({
  version: z.literal(2, { message: 'must be 2 (AgentHippo Custom Engine V2)' }),
  id: z.string().regex(ENGINE_ID_PATTERN, { message: 'must be an engine id such as "my-engine"' }),
  entry: z.string().min(1).max(1024),
  engineExport: z
    .string()
    .regex(/^[A-Za-z_$][A-Za-z0-9_$]{0,127}$/, { message: 'must be a JavaScript export name' }),
  workspaceSync: z.boolean().optional(),
  promptInjection: z.boolean().optional(),
  model: z.string().min(1).max(200).optional(),
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

/** Reads and validates `<dir>/engine.manifest.json` and locates its entry module. */
export async function loadCustomEngineManifest(dir: string): Promise<LoadedCustomEngineManifest> {
  const root = await realpath(dir);
  const file = join(root, CUSTOM_ENGINE_MANIFEST_FILE);
  let text: string;
  try {
    const info = await lstat(file);
    if (!info.isFile()) throw new Error('not a regular file');
    if (info.size > CUSTOM_ENGINE_MANIFEST_MAX_BYTES)
      throw new Error(`larger than ${CUSTOM_ENGINE_MANIFEST_MAX_BYTES} bytes`);
    text = await readFile(file, 'utf8');
  } catch (cause) {
    throw new EngineError('ERR_ENGINE_MANIFEST_INVALID', `${file}: ${(cause as Error).message}`, {
      cause,
    });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new EngineError(
      'ERR_ENGINE_MANIFEST_INVALID',
      `${file}: not JSON: ${(cause as Error).message}`,
      {
        cause,
      },
    );
  }
  const parsed = customEngineManifestSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
      .join('; ');
    throw new EngineError('ERR_ENGINE_MANIFEST_INVALID', `${file}: ${issues}`);
  }
  const manifest = parsed.data;
  const declared = join(root, manifest.entry);
  if (isAbsolute(manifest.entry) || !inside(root, declared)) {
    throw new EngineError(
      'ERR_ENGINE_ENTRY_INVALID',
      `${file}: entry ${JSON.stringify(manifest.entry)} must be a path inside the engine folder`,
    );
  }
  let entryPath: string;
  try {
    entryPath = await realpath(declared);
    if (!(await lstat(entryPath)).isFile()) throw new Error('not a regular file');
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
