import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { DIGEST_EXCLUDED_PATH } from '@packwarden/pack-digest';
import { readBoundedFile } from '@packwarden/pack-manifest/fs';
import { isSemver, parseStrictJson } from '@packwarden/pack-manifest/resolve';

/** The Custom Engine V2 manifest an engine folder must hold (`@packwarden/engines`). */
export const ENGINE_MANIFEST_FILE = 'engine.manifest.json';

/** `engine.manifest.json` and `package.json` larger than this are refused unread. */
const ENGINE_METADATA_MAX_BYTES = 64 * 1024;

/** Engine ids (the rule of `@packwarden/engines`' custom-manifest). */
export const ENGINE_ID_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** What an engine folder says it is: `engine.manifest.json` `id`, `package.json` `version`. */
export interface EngineIdentity {
  id: string;
  /** `package.json` `version`, or `0.0.0` without a `package.json` (the AgentHippo store's rule). */
  version: string;
}

/** Why an engine folder is not an engine that can be signed or verified. */
export type EngineIdentityProblem = { problem: string; code?: string };

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** `<engineDir>/<name>` parsed as strict JSON, `absent`, or why it cannot be used. */
function readMetadata(
  engineDir: string,
  name: string,
): { json: unknown } | { absent: true } | EngineIdentityProblem {
  const read = readBoundedFile(join(engineDir, name), ENGINE_METADATA_MAX_BYTES);
  const cannot = (why: string): EngineIdentityProblem => ({
    problem: `cannot read ${name}: ${why}`,
  });
  switch (read.kind) {
    case 'absent':
      return { absent: true };
    case 'symlink':
      return cannot('it is a symlink; it must be a regular file');
    case 'not-regular-file':
      return cannot('it is not a regular file');
    case 'too-large':
    case 'grew':
      return cannot(`it is larger than ${ENGINE_METADATA_MAX_BYTES} bytes`);
    case 'failed':
      return cannot((read.cause as Error).message);
    case 'read':
      break;
  }
  try {
    // Fatal decoding, as pack-manifest's loadPackManifest: invalid UTF-8 is refused, not repaired.
    return { json: parseStrictJson(utf8.decode(read.bytes), { what: name }) };
  } catch (error) {
    return cannot((error as Error).message);
  }
}

/**
 * Reads the identity an engine signature binds: the `id` of `engine.manifest.json` (Custom Engine
 * V2, `version: 2`) and the `version` of `package.json` (`0.0.0` when there is none, as the
 * AgentHippo store's index builder does). Both files are read as `pack.sig` is
 * (`readBoundedFile`: no symlink followed, no FIFO waited on) and bounded to 64 KiB.
 */
export function readEngineIdentity(engineDir: string): EngineIdentity | EngineIdentityProblem {
  const manifest = readMetadata(engineDir, ENGINE_MANIFEST_FILE);
  if ('problem' in manifest) return manifest;
  if ('absent' in manifest)
    return { problem: `cannot read ${ENGINE_MANIFEST_FILE}: it is missing` };
  const fields = manifest.json as { version?: unknown; id?: unknown } | null;
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
    return { problem: `${ENGINE_MANIFEST_FILE} is not a JSON object` };
  }
  if (fields.version !== 2) {
    return { problem: `${ENGINE_MANIFEST_FILE} is not a Custom Engine V2 manifest (version 2)` };
  }
  if (typeof fields.id !== 'string' || !ENGINE_ID_PATTERN.test(fields.id)) {
    return { problem: `${ENGINE_MANIFEST_FILE} has no valid engine id` };
  }
  const pkg = readMetadata(engineDir, 'package.json');
  if ('problem' in pkg) return pkg;
  if ('absent' in pkg) return { id: fields.id, version: '0.0.0' };
  const declared = (pkg.json as { version?: unknown } | null)?.version;
  if (typeof declared !== 'string' || declared.length > 256 || !isSemver(declared)) {
    return { problem: 'package.json has no semantic version in "version"' };
  }
  return { id: fields.id, version: declared };
}

/**
 * Whether the folder has anything at all named `pack.sig` at its root, a symlink (even a
 * dangling one) included: the digest walk leaves a root `pack.sig` out (anything but a folder,
 * whose files are content), so an engine folder that holds one has a file no engine signature
 * covers (README "Engine signatures"). A folder of that name is refused too: nothing is gained
 * by telling the two apart.
 */
export function hasRootPackSignature(engineDir: string): boolean {
  try {
    lstatSync(join(engineDir, DIGEST_EXCLUDED_PATH));
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}
