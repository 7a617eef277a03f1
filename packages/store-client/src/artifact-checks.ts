import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import {
  compareManifestPaths,
  digestManifest,
  DIGEST_EXCLUDED_PATH as PACK_SIGNATURE_FILE,
} from '@packwarden/pack-digest';
import { loadPackManifest } from '@packwarden/pack-manifest';
import type { EngineVerification, KeySelector, PackVerification } from '@packwarden/pack-signature';
import { StoreError } from './errors.js';
import type { ExtractedEntry } from './extract.js';
import { readSmallFile } from './small-file.js';
import type { ResolvedArtifact } from './store.js';

/**
 * pack-signature's `PACK_SIGNATURE_MAX_BYTES` (4 MiB) and a newline: a copy, so that this module
 * does not load the verifier (checked in test/bounded-reads.test.ts).
 */
export const SIGNATURE_FILE_MAX_BYTES = 4 * 1024 * 1024 + 1;

// Steps 4 and 5 of an install (README "Install: layout and guarantees", "Engines"), one strategy
// per artifact type: what the staged folder must hold, its digest against the index, and the
// signature policy. pack-signature is loaded only where it is needed: jose and the verifier are
// most of the start-up cost.

/** What the checks of one install need to know. */
export interface CheckContext {
  /** The staging folder, extracted and private to this process. */
  dir: string;
  /** Every file written, hashed while it was written. */
  entries: ExtractedEntry[];
  resolved: ResolvedArtifact;
  requireSigned: boolean;
  selectKey: KeySelector | undefined;
  signal: AbortSignal | undefined;
  onVerify: () => void;
}

export interface CheckedArtifact {
  /** Pack digest v1 of what was staged (an engine's without its `engine.sig`). */
  digest: string;
  verification?: PackVerification | EngineVerification;
}

export const noTrustRoot: KeySelector = () => ({
  kind: 'no-trust-root',
  message:
    'no trust root was given to the installer: pass selectKey (the CLI: --keys FILE, --jwks URL --pin …)',
});

/**
 * `label` is how messages name the artifact: `demo@1.0.0` for a pack, `engine echo@1.0.0` for an
 * engine.
 */
function refuseIdentity(
  ctx: CheckContext,
  label: string,
  found: { name: string; version: string },
): void {
  const { slug, version } = ctx.resolved;
  if (found.name === slug && found.version === version) return;
  throw new StoreError(
    'ERR_PACK_IDENTITY_MISMATCH',
    `the archive for ${label} holds ${found.name}@${found.version}`,
  );
}

/**
 * Pack digest v1 of the staged files without the root signature file (from the hashes taken while
 * writing: the folder is private to this process, so it is not read back), compared with the
 * index's digest and signature on a static store.
 */
async function digestAgainstIndex(
  ctx: CheckContext,
  label: string,
  signatureFile: string,
): Promise<string> {
  const digest = digestManifest(
    ctx.entries
      .filter((entry) => entry.path !== signatureFile)
      .sort((a, b) => compareManifestPaths(a.path, b.path)),
  );
  const source = ctx.resolved.source;
  if (source.kind !== 'static') return digest;
  if (digest !== source.digest) {
    throw new StoreError(
      'ERR_PACK_DIGEST_MISMATCH',
      `${label} has digest ${digest}, the index states ${source.digest}`,
    );
  }
  if (source.signature !== undefined) {
    // From the archive just extracted: a symlink or an oversized file is not the one listed.
    const read = readSmallFile(join(ctx.dir, signatureFile), SIGNATURE_FILE_MAX_BYTES);
    const sig = read.ok ? read.bytes.toString('utf8') : undefined;
    if (sig?.trim() !== source.signature.trim()) {
      throw new StoreError(
        'ERR_PACK_SIGNATURE_MISMATCH',
        `the ${signatureFile} in the archive differs from the one the index lists`,
      );
    }
  }
  return digest;
}

/**
 * The signature policy, one for packs and engines (README step 5): with the requirement only
 * `verified` passes. A trust root given without it still refuses a signature that does not
 * verify, is by a key the root does not trust, or cannot be checked; an unsigned artifact
 * installs (reported `unsigned`), and so does a genuine signature by a trusted key over a digest
 * whose rules are not public (`digest-unsupported`, pack-signature README: never a pass, but
 * nothing false either; engines never report it).
 */
function refuseUnverified(
  ctx: CheckContext,
  label: string,
  verification: PackVerification | EngineVerification,
  signatureFile: string,
): void {
  if (ctx.requireSigned && verification.kind !== 'verified') {
    throw new StoreError(
      'ERR_SIGNATURE_REFUSED',
      `${label} was not installed: ${verification.message}`,
      { verification },
    );
  }
  if (
    verification.kind !== 'verified' &&
    verification.kind !== 'unsigned' &&
    verification.kind !== 'digest-unsupported'
  ) {
    throw new StoreError(
      'ERR_SIGNATURE_REFUSED',
      `${label} was not installed: its ${signatureFile} was checked against the trust root given and did not verify: ${verification.message}`,
      { verification },
    );
  }
}

/** A pack: `agent.yaml` loads and names what was asked for; digest; `pack.sig` when checked. */
export async function checkPack(ctx: CheckContext): Promise<CheckedArtifact> {
  const label = `${ctx.resolved.slug}@${ctx.resolved.version}`;
  let manifest;
  try {
    manifest = loadPackManifest(ctx.dir).manifest;
  } catch (cause) {
    throw new StoreError(
      'ERR_PACK_INVALID',
      `${label} has no valid agent.yaml: ${(cause as Error).message}`,
      { cause },
    );
  }
  refuseIdentity(ctx, label, manifest.metadata);
  const digest = await digestAgainstIndex(ctx, label, PACK_SIGNATURE_FILE);
  if (!ctx.requireSigned && !ctx.selectKey) return { digest };
  ctx.onVerify();
  const { verifyPack } = await import('@packwarden/pack-signature');
  const verification = await verifyPack(ctx.dir, {
    selectKey: ctx.selectKey ?? noTrustRoot,
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  });
  refuseUnverified(ctx, label, verification, PACK_SIGNATURE_FILE);
  return { digest, verification };
}

/**
 * An engine (README "Engines"): `engine.manifest.json` (Custom Engine V2) names the id asked for
 * and `package.json` the version; a root `pack.sig` is refused (no engine digest covers it); the
 * digest leaves out the root `engine.sig`, the signature checked (`verifyEngine`). The engine
 * rules live in pack-signature: one definition for signer, verifier and installer.
 */
export async function checkEngine(ctx: CheckContext): Promise<CheckedArtifact> {
  const { slug, version } = ctx.resolved;
  const label = `engine ${slug}@${version}`;
  const signature = await import('@packwarden/pack-signature');
  const identity = signature.readEngineIdentity(ctx.dir);
  if ('problem' in identity) {
    throw new StoreError(
      'ERR_ENGINE_INVALID',
      `${slug}@${version} is not a valid engine: ${identity.problem}`,
    );
  }
  refuseIdentity(ctx, label, { name: identity.id, version: identity.version });
  // Anything of that name, a folder too (pack-signature's `hasRootPackSignature`, which the
  // engine verifier and `pack verify --installed` apply): an install must not keep what they
  // refuse. The staged files alone would miss a folder, empty or not.
  if (lstatSync(join(ctx.dir, PACK_SIGNATURE_FILE), { throwIfNoEntry: false }) !== undefined) {
    throw new StoreError(
      'ERR_ENGINE_INVALID',
      `${slug}@${version} holds a root ${PACK_SIGNATURE_FILE}, which no engine signature covers`,
    );
  }
  const digest = await digestAgainstIndex(ctx, label, signature.ENGINE_SIGNATURE_FILE);
  if (!ctx.requireSigned && !ctx.selectKey) return { digest };
  ctx.onVerify();
  const verification = await signature.verifyEngine(ctx.dir, {
    selectKey: ctx.selectKey ?? noTrustRoot,
    expectedId: slug,
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  });
  refuseUnverified(ctx, label, verification, signature.ENGINE_SIGNATURE_FILE);
  return { digest, verification };
}
