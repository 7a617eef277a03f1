import { loadPackManifest } from '@packwarden/pack-manifest';
import { packArchive } from '../build.js';
import { StoreError } from '../errors.js';
import type { PackArtifactMeta } from './manifest.js';
import type { OciReference } from './reference.js';
import {
  pushPackArtifact,
  type PushPackArtifactOptions,
  type PushPackArtifactResult,
} from './push.js';

export interface PushPackFolderResult extends PushPackArtifactResult {
  meta: PackArtifactMeta;
}

/**
 * `store push <pack> oci://…`: the pack folder's byte-reproducible archive (the bytes static
 * stores serve, README "Static stores") pushed as a pack artifact, its metadata taken from
 * `agent.yaml`, its pack digest recomputed and its signer read from `pack.sig` (unverified: a
 * label for `store info`; installs verify). A malformed `pack.sig` is refused rather than pushed
 * as if unsigned.
 */
export async function pushPackFolder(
  dir: string,
  ref: string | OciReference,
  options: PushPackArtifactOptions = {},
): Promise<PushPackFolderResult> {
  let metadata: { name: string; version: string; description?: unknown };
  try {
    metadata = loadPackManifest(dir).manifest.metadata;
  } catch (cause) {
    throw new StoreError('ERR_PACK_INVALID', `${dir}: ${(cause as Error).message}`, {
      cause,
      subject: dir,
    });
  }
  // Imported here, as installs do (artifact-checks.ts): importing the package's entry must not
  // load the verifier and jose for every caller that never pushes or checks a signature.
  const { readPackSignature } = await import('@packwarden/pack-signature');
  const signature = await readPackSignature(dir);
  if (signature.kind === 'malformed') {
    throw new StoreError(
      'ERR_PACK_INVALID',
      `${dir}: pack.sig is malformed (${signature.message}); re-sign the pack or remove pack.sig`,
      { subject: dir },
    );
  }
  const { archive, digest } = await packArchive(dir);
  const meta: PackArtifactMeta = {
    name: metadata.name,
    version: metadata.version,
    digest,
    ...(typeof metadata.description === 'string' && metadata.description
      ? { description: metadata.description }
      : {}),
    ...(signature.kind === 'present' ? { signer: signature.header.kid } : {}),
  };
  const pushed = await pushPackArtifact(archive, meta, ref, options);
  return { ...pushed, meta };
}
