import { createHash } from 'node:crypto';
import { isSemver } from '@packwarden/pack-manifest';
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { StoreError } from '../errors.js';
import {
  repositoryScope,
  resolveOciClientOptions,
  RegistrySession,
  type OciClientOptions,
} from './client.js';
import { ociError } from './errors.js';
import {
  buildPackManifest,
  OCI_EMPTY_CONTENT,
  OCI_MANIFEST_MEDIA_TYPE,
  sha256Digest,
  validateArtifactMeta,
  type PackArtifactMeta,
} from './manifest.js';
import {
  formatOciReference,
  OCI_REPOSITORY_PATTERN,
  OCI_TAG_PATTERN,
  parseOciReference,
  type OciReference,
} from './reference.js';

export interface PushPackArtifactOptions extends OciClientOptions {
  /** Repositories on the same registry that may already hold the layer: tried as cross-repository mounts. */
  mountFrom?: string[];
  /** Blobs larger than this are uploaded in chunks (PATCH). Default 16 MiB. */
  chunkThresholdBytes?: number;
  /** Chunk size of a chunked upload. Default 8 MiB. */
  chunkBytes?: number;
  /**
   * Refuse (`ERR_OCI_TAG_EXISTS`) when the tag already names another manifest: a version once
   * published is never replaced. Re-pushing the same pack stays allowed. Checked before any
   * upload; the registry itself does not lock the tag, so two concurrent pushers can still race.
   */
  immutableTags?: boolean;
}

export type BlobUploadMethod = 'present' | 'mounted' | 'monolithic' | 'chunked';

export interface PushPackArtifactResult {
  /** `oci://registry/repository@sha256:…`: what to pin in a lockfile. */
  reference: string;
  /** `oci://registry/repository:tag`. */
  taggedReference: string;
  tag: string;
  manifestDigest: string;
  manifestSize: number;
  layer: { digest: string; size: number; upload: BlobUploadMethod };
}

/** The archive to push, hashed once; chunks are read again from it (a file) or sliced (bytes). */
interface BlobSource {
  digest: string;
  size: number;
  read(offset: number, length: number): Promise<Buffer>;
  close(): Promise<void>;
}

async function bytesSource(bytes: Uint8Array): Promise<BlobSource> {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return {
    digest: sha256Digest(buffer),
    size: buffer.length,
    read: async (offset, length) => buffer.subarray(offset, offset + length),
    close: async () => undefined,
  };
}

async function fileSource(path: string, maxBytes: number): Promise<BlobSource> {
  const ioError = (cause: unknown): StoreError =>
    ociError(
      'ERR_OCI_IO',
      `cannot read the archive ${path}: ${(cause as Error)?.message ?? cause}`,
      {
        cause,
        subject: path,
      },
    );
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (cause) {
    throw ioError(cause);
  }
  try {
    const info = await handle.stat();
    if (!info.isFile())
      throw ociError('ERR_OCI_IO', `${path} is not a regular file`, { subject: path });
    if (info.size > maxBytes) {
      throw ociError(
        'ERR_OCI_BLOB_TOO_LARGE',
        `${path} is ${info.size} bytes, more than the limit of ${maxBytes}`,
        {
          subject: path,
        },
      );
    }
    const hash = createHash('sha256');
    const chunk = Buffer.alloc(1024 * 1024);
    let size = 0;
    for (;;) {
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, size);
      if (bytesRead === 0) break;
      hash.update(chunk.subarray(0, bytesRead));
      size += bytesRead;
      if (size > maxBytes)
        throw ociError('ERR_OCI_BLOB_TOO_LARGE', `${path} grew past ${maxBytes} bytes`, {
          subject: path,
        });
    }
    return {
      digest: `sha256:${hash.digest('hex')}`,
      size,
      read: async (offset, length) => {
        const out = Buffer.alloc(length);
        let done = 0;
        try {
          while (done < length) {
            const { bytesRead } = await handle.read(out, done, length - done, offset + done);
            if (bytesRead === 0) break;
            done += bytesRead;
          }
        } catch (cause) {
          throw ioError(cause);
        }
        // A file that shrank since it was hashed: the registry would refuse the digest anyway.
        if (done !== length)
          throw ociError('ERR_OCI_IO', `${path} changed while it was pushed`, { subject: path });
        return out;
      },
      close: () => handle.close(),
    };
  } catch (error) {
    await handle.close().catch(() => undefined);
    if (error instanceof StoreError) throw error;
    throw ioError(error);
  }
}

function withDigest(location: URL, digest: string): URL {
  const url = new URL(location);
  url.searchParams.set('digest', digest);
  return url;
}

/** The upload session URL from a 202's `Location` (relative or absolute, same origin only). */
function uploadLocation(session: RegistrySession, response: Response, what: string): URL {
  const location = response.headers.get('location');
  if (!location) {
    throw ociError(
      'ERR_OCI_UPLOAD_FAILED',
      `${what}: the registry answered ${response.status} without a Location`,
      {
        subject: session.ref.registry,
      },
    );
  }
  const url = new URL(location, session.ref.baseUrl);
  if (url.origin !== session.ref.baseUrl.origin) {
    throw ociError(
      'ERR_OCI_UPLOAD_FAILED',
      `${what}: the registry moved the upload to another origin (${url.origin}); credentials stay with ${session.ref.baseUrl.origin}`,
      { subject: url.origin },
    );
  }
  return url;
}

function checkReturnedDigest(response: Response, digest: string, what: string): void {
  const returned = response.headers.get('docker-content-digest');
  if (returned !== null && returned !== digest) {
    throw ociError(
      'ERR_OCI_UPLOAD_FAILED',
      `${what}: the registry stored ${returned.slice(0, 80)}, not ${digest}`,
      {
        subject: digest,
      },
    );
  }
}

async function blobExists(
  session: RegistrySession,
  digest: string,
  scopes: string[],
): Promise<boolean> {
  const fetched = await session.send({
    method: 'HEAD',
    url: session.url(`blobs/${digest}`),
    scopes,
    followRedirects: true,
  });
  await fetched.response.body?.cancel().catch(() => undefined);
  if (fetched.response.status === 200) return true;
  if (fetched.response.status === 404) return false;
  await session.expectStatus(fetched, [200, 404], `checking blob ${digest}`);
  return false;
}

/**
 * Uploads one blob unless the repository has it: HEAD, then a cross-repository mount from each
 * `mountFrom` repository, then POST + a monolithic PUT, or PATCH chunks + PUT past the threshold
 * (distribution spec "Pushing blobs").
 */
async function pushBlob(
  session: RegistrySession,
  source: BlobSource,
  options: { mountFrom: string[]; chunkThresholdBytes: number; chunkBytes: number },
): Promise<BlobUploadMethod> {
  const push = [repositoryScope(session.ref.repository, 'pull,push')];
  if (await blobExists(session, source.digest, push)) return 'present';
  let location: URL | undefined;
  for (const from of options.mountFrom) {
    if (from === session.ref.repository) continue;
    const url = session.url('blobs/uploads/');
    url.searchParams.set('mount', source.digest);
    url.searchParams.set('from', from);
    const fetched = await session.send({
      method: 'POST',
      url,
      scopes: [...push, repositoryScope(from, 'pull')],
    });
    if (fetched.response.status === 201) {
      await fetched.response.body?.cancel().catch(() => undefined);
      checkReturnedDigest(
        fetched.response,
        source.digest,
        `mounting ${source.digest} from ${from}`,
      );
      return 'mounted';
    }
    await session.expectStatus(fetched, [202], `mounting ${source.digest} from ${from}`);
    await fetched.response.body?.cancel().catch(() => undefined);
    // The registry could not mount and opened an upload session instead: use it.
    location = uploadLocation(session, fetched.response, 'blob upload');
    break;
  }
  if (!location) {
    const fetched = await session.send({
      method: 'POST',
      url: session.url('blobs/uploads/'),
      scopes: push,
    });
    await session.expectStatus(fetched, [202], 'starting a blob upload');
    await fetched.response.body?.cancel().catch(() => undefined);
    location = uploadLocation(session, fetched.response, 'blob upload');
  }
  const octets = { 'content-type': 'application/octet-stream' };
  if (source.size <= options.chunkThresholdBytes) {
    const body = await source.read(0, source.size);
    const fetched = await session.send({
      method: 'PUT',
      url: withDigest(location, source.digest),
      headers: octets,
      body,
      scopes: push,
    });
    await session.expectStatus(fetched, [201], `uploading blob ${source.digest}`);
    await fetched.response.body?.cancel().catch(() => undefined);
    checkReturnedDigest(fetched.response, source.digest, `uploading blob ${source.digest}`);
    return 'monolithic';
  }
  for (let offset = 0; offset < source.size;) {
    const length = Math.min(options.chunkBytes, source.size - offset);
    const body = await source.read(offset, length);
    const end = offset + length - 1;
    const fetched = await session.send({
      method: 'PATCH',
      url: location,
      headers: { ...octets, 'content-range': `${offset}-${end}` },
      body,
      scopes: push,
    });
    await session.expectStatus(fetched, [202], `uploading a chunk of blob ${source.digest}`);
    await fetched.response.body?.cancel().catch(() => undefined);
    const range = fetched.response.headers.get('range');
    if (range !== null && range !== `0-${end}`) {
      throw ociError(
        'ERR_OCI_UPLOAD_FAILED',
        `the registry holds bytes ${range.slice(0, 40)} of the upload, not 0-${end}`,
        {
          subject: source.digest,
        },
      );
    }
    location = uploadLocation(session, fetched.response, 'blob chunk upload');
    offset += length;
  }
  const fetched = await session.send({
    method: 'PUT',
    url: withDigest(location, source.digest),
    headers: octets,
    body: Buffer.alloc(0),
    scopes: push,
  });
  await session.expectStatus(fetched, [201], `completing the upload of blob ${source.digest}`);
  await fetched.response.body?.cancel().catch(() => undefined);
  checkReturnedDigest(
    fetched.response,
    source.digest,
    `completing the upload of blob ${source.digest}`,
  );
  return 'chunked';
}

/** `immutableTags`: the tag must be absent, or already name exactly this manifest. */
async function assertTagFree(session: RegistrySession, tag: string, digest: string): Promise<void> {
  const fetched = await session.send({
    method: 'GET',
    url: session.url(`manifests/${tag}`),
    headers: { accept: OCI_MANIFEST_MEDIA_TYPE, 'accept-encoding': 'identity' },
    scopes: [repositoryScope(session.ref.repository, 'pull,push')],
  });
  if (fetched.response.status === 404) {
    await fetched.response.body?.cancel().catch(() => undefined);
    return;
  }
  await session.expectStatus(fetched, [200], `checking the tag ${tag}`);
  const limit = session.options.limits.maxManifestBytes;
  const existing = sha256Digest(
    await session.readBody(fetched, limit, () =>
      ociError(
        'ERR_OCI_RESPONSE_TOO_LARGE',
        `the manifest tagged ${tag} is larger than ${limit} bytes`,
      ),
    ),
  );
  if (existing !== digest) {
    throw ociError(
      'ERR_OCI_TAG_EXISTS',
      `${formatOciReference(session.ref)} already names ${existing}; this pack would be ${digest}. Publish a new version instead of replacing one`,
      { subject: formatOciReference(session.ref) },
    );
  }
}

/**
 * Pushes a pack archive as a pack artifact (OCI.md "The artifact") and tags it: the reference's
 * tag, else `meta.version`. The manifest has no time stamps and a canonical serialisation, so
 * pushing the same archive and metadata again gives the same manifest digest.
 */
export async function pushPackArtifact(
  archive: Uint8Array | string,
  meta: PackArtifactMeta,
  ref: string | OciReference,
  options: PushPackArtifactOptions = {},
): Promise<PushPackArtifactResult> {
  const resolved = resolveOciClientOptions(options);
  const target =
    typeof ref === 'string'
      ? parseOciReference(ref, { plainHttp: options.plainHttp === true })
      : ref;
  if (target.digest) {
    throw ociError(
      'ERR_OCI_REF_INVALID',
      `push takes a tag, not a digest: ${formatOciReference(target)}`,
      {
        subject: formatOciReference(target),
      },
    );
  }
  const mountFrom = options.mountFrom ?? [];
  for (const from of mountFrom) {
    if (typeof from !== 'string' || !OCI_REPOSITORY_PATTERN.test(from)) {
      throw new StoreError(
        'ERR_INVALID_ARGUMENT',
        `mountFrom: ${JSON.stringify(String(from).slice(0, 100))} is not a repository name`,
      );
    }
  }
  const chunkThresholdBytes = options.chunkThresholdBytes ?? 16 * 1024 * 1024;
  const chunkBytes = options.chunkBytes ?? 8 * 1024 * 1024;
  if (!Number.isSafeInteger(chunkThresholdBytes) || chunkThresholdBytes < 0)
    throw new StoreError(
      'ERR_INVALID_ARGUMENT',
      'chunkThresholdBytes must be a non-negative integer',
    );
  if (!Number.isSafeInteger(chunkBytes) || chunkBytes < 1 || chunkBytes > 256 * 1024 * 1024)
    throw new StoreError('ERR_INVALID_ARGUMENT', 'chunkBytes must be an integer from 1 to 256 MiB');
  validateArtifactMeta(meta);
  const tag = target.tag ?? meta.version;
  if (!OCI_TAG_PATTERN.test(tag)) {
    throw ociError(
      'ERR_OCI_REF_INVALID',
      `the version ${meta.version} is not a valid tag (build metadata "+" is not allowed in tags); give a tag in the reference`,
      { subject: formatOciReference(target) },
    );
  }
  if (isSemver(tag) && tag !== meta.version) {
    throw new StoreError(
      'ERR_INVALID_ARGUMENT',
      `the tag ${tag} is a version other than the pack's (${meta.version}); tag it ${meta.version} or with a name that is not a version`,
    );
  }
  const tagged: OciReference = { ...target, tag };
  const source =
    typeof archive === 'string'
      ? await fileSource(archive, resolved.limits.maxLayerBytes)
      : await bytesSource(archive);
  try {
    if (source.size > resolved.limits.maxLayerBytes) {
      throw ociError(
        'ERR_OCI_BLOB_TOO_LARGE',
        `the archive is ${source.size} bytes, more than the limit of ${resolved.limits.maxLayerBytes}`,
      );
    }
    // Built (and validated) before any request: bad metadata never leaves a half-pushed artifact.
    const built = buildPackManifest(meta, { digest: source.digest, size: source.size });
    const session = new RegistrySession(tagged, resolved);
    if (options.immutableTags) await assertTagFree(session, tag, built.digest);
    const blobOptions = { mountFrom, chunkThresholdBytes, chunkBytes };
    await pushBlob(session, await bytesSource(OCI_EMPTY_CONTENT), {
      ...blobOptions,
      mountFrom: [],
    });
    const upload = await pushBlob(session, source, blobOptions);
    const fetched = await session.send({
      method: 'PUT',
      url: session.url(`manifests/${tag}`),
      headers: { 'content-type': OCI_MANIFEST_MEDIA_TYPE },
      body: built.bytes,
      scopes: [repositoryScope(target.repository, 'pull,push')],
    });
    await session.expectStatus(
      fetched,
      [201],
      `pushing the manifest ${formatOciReference(tagged)}`,
    );
    await fetched.response.body?.cancel().catch(() => undefined);
    checkReturnedDigest(fetched.response, built.digest, 'pushing the manifest');
    return {
      reference: formatOciReference({
        registry: target.registry,
        repository: target.repository,
        digest: built.digest,
      }),
      taggedReference: formatOciReference(tagged),
      tag,
      manifestDigest: built.digest,
      manifestSize: built.bytes.length,
      layer: { digest: source.digest, size: source.size, upload },
    };
  } finally {
    await source.close().catch(() => undefined);
  }
}
