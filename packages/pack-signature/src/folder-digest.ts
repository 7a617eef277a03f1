import { computePackDigest, digestManifest, type PackDigestEntry } from '@packwarden/pack-digest';
import { PackSignatureError } from './errors.js';

export type FolderDigest =
  { ok: true; digest: string; entries: PackDigestEntry[] } | { ok: false; error: unknown };

/**
 * The digest a signature file at the root of `dir` binds: Pack digest v1 of the folder without
 * that root file (README "Engine signatures": `engine.sig` is left out as the root `pack.sig`
 * is for packs; the digest walk itself already leaves out `pack.sig`). Rejects only with
 * `ERR_ABORTED` (`${caller} was aborted.`); any other failure is `{ ok: false, error }` for the
 * caller to report as a signer or a verifier does.
 */
export async function digestSignedFolder(
  dir: string,
  signatureFile: string,
  signal: AbortSignal | undefined,
  caller: string,
): Promise<FolderDigest> {
  throwIfAborted(signal, caller);
  let all;
  try {
    all = await computePackDigest(dir, signal ? { signal } : {});
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_DIGEST_ABORTED') {
      throw new PackSignatureError('ERR_ABORTED', `${caller} was aborted.`, { cause: error });
    }
    return { ok: false, error };
  }
  const entries = all.entries.filter((entry) => entry.path !== signatureFile);
  if (entries.length === all.entries.length) {
    return { ok: true, digest: all.digest, entries: all.entries };
  }
  return { ok: true, digest: digestManifest(entries), entries };
}

export function throwIfAborted(signal: AbortSignal | undefined, caller: string): void {
  if (signal?.aborted) {
    throw new PackSignatureError('ERR_ABORTED', `${caller} was aborted.`, {
      cause: signal.reason,
    });
  }
}
