import { createHash } from 'node:crypto';
import { isSemver, parseStrictJson } from '@packwarden/pack-manifest';
import { isSlug } from '../refs.js';
import { ociError } from './errors.js';
import type { OciLimits } from './limits.js';
import { OCI_DIGEST_PATTERN } from './reference.js';

// The pack artifact (OCI.md "The artifact"): an OCI image manifest (image-spec v1.1) whose
// artifactType names packwarden packs, with the empty config and one layer holding the
// byte-reproducible pack archive.
export const OCI_MANIFEST_MEDIA_TYPE = 'application/vnd.oci.image.manifest.v1+json';
export const PACK_ARTIFACT_TYPE = 'application/vnd.packwarden.pack.v1';
export const PACK_LAYER_MEDIA_TYPE = 'application/vnd.packwarden.pack.layer.v1.tar+gzip';
export const OCI_EMPTY_MEDIA_TYPE = 'application/vnd.oci.empty.v1+json';
/** The empty JSON object `{}`, the image-spec's "empty descriptor" content. */
export const OCI_EMPTY_CONTENT = Buffer.from('{}');
export const OCI_EMPTY_DIGEST =
  'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a';

export const ANNOTATION_TITLE = 'org.opencontainers.image.title';
export const ANNOTATION_VERSION = 'org.opencontainers.image.version';
export const ANNOTATION_DESCRIPTION = 'org.opencontainers.image.description';
export const ANNOTATION_PACK_DIGEST = 'dev.packwarden.pack.digest';
export const ANNOTATION_PACK_SIGNER = 'dev.packwarden.pack.signer';

/** What the manifest says about the pack. Installs recompute all of it from the layer. */
export interface PackArtifactMeta {
  /** The pack's name (`metadata.name`). */
  name: string;
  version: string;
  description?: string;
  /** Pack digest v1, 64 hex. */
  digest: string;
  /** The `kid` of the key that signed `pack.sig`, when signed. */
  signer?: string;
}

export interface OciDescriptor {
  mediaType: string;
  digest: string;
  size: number;
}

export interface PackManifest {
  schemaVersion: 2;
  mediaType: typeof OCI_MANIFEST_MEDIA_TYPE;
  artifactType: typeof PACK_ARTIFACT_TYPE;
  config: OciDescriptor;
  layers: [OciDescriptor];
  annotations: Record<string, string>;
}

export function sha256Digest(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** JSON with object keys sorted and no white space: the same manifest always has the same bytes. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function validateArtifactMeta(meta: PackArtifactMeta, maxAnnotationLength = 4096): void {
  const bad = (why: string): never => {
    throw ociError('ERR_OCI_MANIFEST_INVALID', `the pack metadata cannot be published: ${why}`);
  };
  if (typeof meta !== 'object' || meta === null) return bad('it is not an object');
  if (typeof meta.name !== 'string' || !isSlug(meta.name)) return bad('name must be a pack name');
  if (typeof meta.version !== 'string' || !isSemver(meta.version))
    return bad('version must be a semantic version');
  if (typeof meta.digest !== 'string' || !/^[0-9a-f]{64}$/.test(meta.digest))
    return bad('digest must be a pack digest (64 hex)');
  for (const [key, value] of [
    ['description', meta.description],
    ['signer', meta.signer],
  ] as const) {
    if (value === undefined) continue;
    if (typeof value !== 'string' || value.length > maxAnnotationLength)
      return bad(`${key} must be a string of at most ${maxAnnotationLength} characters`);
  }
}

/** The manifest for a pack whose archive (the layer) has `layer` as digest and size. */
export function buildPackManifest(
  meta: PackArtifactMeta,
  layer: { digest: string; size: number },
): { manifest: PackManifest; bytes: Buffer; digest: string } {
  validateArtifactMeta(meta);
  const annotations: Record<string, string> = {
    [ANNOTATION_TITLE]: meta.name,
    [ANNOTATION_VERSION]: meta.version,
    [ANNOTATION_PACK_DIGEST]: meta.digest,
  };
  if (meta.description) annotations[ANNOTATION_DESCRIPTION] = meta.description;
  if (meta.signer) annotations[ANNOTATION_PACK_SIGNER] = meta.signer;
  const manifest: PackManifest = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST_MEDIA_TYPE,
    artifactType: PACK_ARTIFACT_TYPE,
    config: {
      mediaType: OCI_EMPTY_MEDIA_TYPE,
      digest: OCI_EMPTY_DIGEST,
      size: OCI_EMPTY_CONTENT.length,
    },
    layers: [{ mediaType: PACK_LAYER_MEDIA_TYPE, digest: layer.digest, size: layer.size }],
    annotations,
  };
  const bytes = Buffer.from(canonicalJson(manifest));
  return { manifest, bytes, digest: sha256Digest(bytes) };
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function descriptor(value: unknown, what: string): OciDescriptor {
  const bad = (why: string): never => {
    throw ociError('ERR_OCI_MANIFEST_INVALID', `the manifest's ${what} ${why}`);
  };
  if (!isRecord(value)) return bad('is not an object');
  const { mediaType, digest, size, urls } = value;
  if (typeof mediaType !== 'string') return bad('has no mediaType');
  if (typeof digest !== 'string' || !OCI_DIGEST_PATTERN.test(digest))
    return bad('digest is not sha256:<64 hex>');
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0)
    return bad('size is not a non-negative integer');
  // Foreign URLs would send the client to hosts the registry does not vouch for.
  if (urls !== undefined) return bad('lists urls; pack layers are served by the registry');
  return { mediaType, digest, size };
}

/**
 * Parses and judges manifest bytes: a pack artifact exactly as written by `buildPackManifest`
 * (media type, artifactType, the empty config, one layer of the pack media type, the required
 * annotations), or `ERR_OCI_MANIFEST_INVALID`. Unknown extra fields are ignored.
 */
export function parsePackManifest(bytes: Uint8Array, limits: OciLimits): PackManifest {
  const bad = (why: string): never => {
    throw ociError('ERR_OCI_MANIFEST_INVALID', `not a packwarden pack artifact: ${why}`);
  };
  let value: unknown;
  try {
    // The project's strict parser, as for store indexes: the lock pins these bytes by digest, so
    // a member named twice (a layer `digest`, the pack digest annotation) must not name one blob
    // to this reader and another to the next (JSON.parse keeps the last one).
    value = parseStrictJson(new TextDecoder('utf-8', { fatal: true }).decode(bytes), {
      maxBytes: Math.max(limits.maxManifestBytes, bytes.length),
      what: 'the manifest',
    });
  } catch (cause) {
    throw ociError(
      'ERR_OCI_MANIFEST_INVALID',
      `the manifest is not strict UTF-8 JSON: ${(cause as Error).message}`,
      { cause },
    );
  }
  if (!isRecord(value)) return bad('the manifest is not a JSON object');
  if (value.schemaVersion !== 2) return bad('schemaVersion is not 2');
  if (value.mediaType !== OCI_MANIFEST_MEDIA_TYPE)
    return bad(
      `mediaType is ${JSON.stringify(String(value.mediaType).slice(0, 100))}, not ${OCI_MANIFEST_MEDIA_TYPE}`,
    );
  if (value.artifactType !== PACK_ARTIFACT_TYPE)
    return bad(
      `artifactType is ${JSON.stringify(String(value.artifactType).slice(0, 100))}, not ${PACK_ARTIFACT_TYPE}`,
    );
  const config = descriptor(value.config, 'config');
  if (
    config.mediaType !== OCI_EMPTY_MEDIA_TYPE ||
    config.digest !== OCI_EMPTY_DIGEST ||
    config.size !== 2
  )
    return bad('the config is not the empty descriptor');
  if (!Array.isArray(value.layers) || value.layers.length !== 1)
    return bad('it must have exactly one layer');
  const layer = descriptor(value.layers[0], 'layer');
  if (layer.mediaType !== PACK_LAYER_MEDIA_TYPE)
    return bad(`the layer's mediaType is not ${PACK_LAYER_MEDIA_TYPE}`);
  if (layer.size > limits.maxLayerBytes) {
    throw ociError(
      'ERR_OCI_BLOB_TOO_LARGE',
      `the pack layer is ${layer.size} bytes, more than the limit of ${limits.maxLayerBytes}`,
      { subject: layer.digest },
    );
  }
  if (!isRecord(value.annotations)) return bad('it has no annotations');
  const entries = Object.entries(value.annotations);
  if (entries.length > limits.maxAnnotations)
    return bad(`more than ${limits.maxAnnotations} annotations`);
  const annotations: Record<string, string> = {};
  for (const [key, v] of entries) {
    if (typeof v !== 'string' || v.length > limits.maxAnnotationLength)
      return bad(
        `annotation ${JSON.stringify(key.slice(0, 100))} is not a string of at most ${limits.maxAnnotationLength} characters`,
      );
    annotations[key] = v;
  }
  const title = annotations[ANNOTATION_TITLE];
  const version = annotations[ANNOTATION_VERSION];
  const digest = annotations[ANNOTATION_PACK_DIGEST];
  if (title === undefined || !isSlug(title)) return bad(`${ANNOTATION_TITLE} is not a pack name`);
  if (version === undefined || !isSemver(version))
    return bad(`${ANNOTATION_VERSION} is not a semantic version`);
  if (digest === undefined || !/^[0-9a-f]{64}$/.test(digest))
    return bad(`${ANNOTATION_PACK_DIGEST} is not 64 hex`);
  return {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST_MEDIA_TYPE,
    artifactType: PACK_ARTIFACT_TYPE,
    config,
    layers: [layer],
    annotations,
  };
}

/** The pack metadata the manifest's annotations claim (unverified until the layer is installed). */
export function artifactMetaOf(manifest: PackManifest): PackArtifactMeta {
  const a = manifest.annotations;
  return {
    name: a[ANNOTATION_TITLE]!,
    version: a[ANNOTATION_VERSION]!,
    digest: a[ANNOTATION_PACK_DIGEST]!,
    ...(a[ANNOTATION_DESCRIPTION] !== undefined ? { description: a[ANNOTATION_DESCRIPTION] } : {}),
    ...(a[ANNOTATION_PACK_SIGNER] !== undefined ? { signer: a[ANNOTATION_PACK_SIGNER] } : {}),
  };
}
