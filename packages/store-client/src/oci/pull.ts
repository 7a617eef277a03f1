import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { isSemver } from '@packwarden/pack-manifest';
import { startDownloadDeadline } from '../download-deadline.js';
import { isStoreError, StoreError } from '../errors.js';
import { bodyStream } from '../http.js';
import { compareSemver } from '../semver.js';
import {
  repositoryScope,
  resolveOciClientOptions,
  RegistrySession,
  type OciClientOptions,
} from './client.js';
import { ociError } from './errors.js';
import {
  artifactMetaOf,
  OCI_MANIFEST_MEDIA_TYPE,
  parsePackManifest,
  sha256Digest,
  type PackArtifactMeta,
  type PackManifest,
} from './manifest.js';
import {
  formatOciReference,
  OCI_TAG_PATTERN,
  parseOciReference,
  type OciReference,
} from './reference.js';

/** A pack artifact's manifest, read and judged: what `store info` shows and a lockfile pins. */
export interface ResolvedPackArtifact {
  /** `oci://registry/repository@sha256:…`: the manifest digest, what a lockfile records as `resolved`. */
  reference: string;
  /** `oci://registry/repository`: what a lockfile records as `source`. */
  repository: string;
  /** The tag that was resolved (given, or the highest semver tag), when not pulled by digest. */
  tag?: string;
  manifestDigest: string;
  manifestSize: number;
  manifest: PackManifest;
  /** What the annotations claim; an install recomputes and checks all of it. */
  meta: PackArtifactMeta;
  layer: { digest: string; size: number };
}

export interface PullPackArtifactResult extends ResolvedPackArtifact {
  /** The layer (the pack archive), written at `to` only once its size and digest were checked. */
  file: string;
}

function toReference(ref: string | OciReference, options: OciClientOptions): OciReference {
  return typeof ref === 'string'
    ? parseOciReference(ref, { plainHttp: options.plainHttp === true })
    : ref;
}

/** The highest semantic-version tag: the highest release, else the highest pre-release. */
export function highestSemverTag(tags: readonly string[]): string | undefined {
  const versions = tags.filter((t) => isSemver(t));
  const releases = versions.filter((t) => !t.includes('-'));
  const pool = releases.length ? releases : versions;
  return pool.reduce<string | undefined>(
    (best, t) => (best === undefined || compareSemver(t, best) > 0 ? t : best),
    undefined,
  );
}

function nextLink(header: string | null, session: RegistrySession): URL | undefined {
  if (!header) return undefined;
  // RFC 8288: `<uri>; rel="next"`; the distribution spec uses it for tag pagination.
  for (const part of header.split(/,(?=\s*<)/)) {
    const m = /^\s*<([^>]*)>\s*((?:;[^;]*)*)$/.exec(part);
    if (!m) continue;
    if (!/;\s*rel="?next"?\s*(?:;|$)/i.test(m[2]!)) continue;
    const url = new URL(m[1]!, session.ref.baseUrl);
    if (
      url.origin !== session.ref.baseUrl.origin ||
      url.pathname !== session.url('tags/list').pathname
    ) {
      throw ociError(
        'ERR_OCI_TAGS_INVALID',
        `the tag list's next page points elsewhere (${url.origin}${url.pathname})`,
      );
    }
    return url;
  }
  return undefined;
}

async function listTags(session: RegistrySession): Promise<string[]> {
  const limits = session.options.limits;
  const tags: string[] = [];
  const seen = new Set<string>();
  let url: URL | undefined = session.url('tags/list');
  url.searchParams.set('n', '1000');
  for (let page = 0; url; page++) {
    if (page >= limits.maxTagPages || seen.has(url.href)) {
      throw ociError(
        'ERR_OCI_TAGS_INVALID',
        `the tag list goes on for more than ${limits.maxTagPages} pages (or loops)`,
        {
          subject: formatOciReference(session.ref),
        },
      );
    }
    seen.add(url.href);
    const fetched = await session.send({
      method: 'GET',
      url,
      headers: { accept: 'application/json' },
      scopes: [repositoryScope(session.ref.repository, 'pull')],
    });
    await session.expectStatus(
      fetched,
      [200],
      `listing the tags of ${formatOciReference(session.ref)}`,
    );
    const body = await session.readBody(fetched, limits.maxTagsPageBytes, () =>
      ociError(
        'ERR_OCI_RESPONSE_TOO_LARGE',
        `a page of the tag list is larger than ${limits.maxTagsPageBytes} bytes`,
      ),
    );
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch (cause) {
      throw ociError('ERR_OCI_TAGS_INVALID', 'the tag list is not JSON', { cause });
    }
    const list = (parsed as { tags?: unknown } | null)?.tags;
    if (
      typeof parsed !== 'object' ||
      parsed === null ||
      (list !== null && list !== undefined && !Array.isArray(list))
    ) {
      throw ociError('ERR_OCI_TAGS_INVALID', 'the tag list is not { name, tags: [...] }');
    }
    for (const tag of (list ?? []) as unknown[]) {
      if (typeof tag !== 'string' || !OCI_TAG_PATTERN.test(tag)) {
        throw ociError(
          'ERR_OCI_TAGS_INVALID',
          `the tag list holds ${JSON.stringify(String(tag).slice(0, 100))}, not a tag`,
        );
      }
      tags.push(tag);
      if (tags.length > limits.maxTags) {
        throw ociError(
          'ERR_OCI_TAGS_INVALID',
          `the repository has more than ${limits.maxTags} tags`,
        );
      }
    }
    url = nextLink(fetched.response.headers.get('link'), session);
  }
  return tags;
}

/** Every tag of the repository (`/v2/<name>/tags/list`, all pages), in the registry's order. */
export async function listOciTags(
  ref: string | OciReference,
  options: OciClientOptions = {},
): Promise<string[]> {
  const target = toReference(ref, options);
  return listTags(new RegistrySession(target, resolveOciClientOptions(options)));
}

async function fetchManifest(
  session: RegistrySession,
  reference: string,
): Promise<{ bytes: Buffer; digest: string }> {
  const limits = session.options.limits;
  const fetched = await session.send({
    method: 'GET',
    url: session.url(`manifests/${reference}`),
    // identity: fetch would decode a Content-Encoding, and the digest is of the bytes as stored.
    headers: { accept: OCI_MANIFEST_MEDIA_TYPE, 'accept-encoding': 'identity' },
    scopes: [repositoryScope(session.ref.repository, 'pull')],
    followRedirects: true,
  });
  const where = formatOciReference({
    ...session.ref,
    ...(reference.startsWith('sha256:')
      ? { tag: undefined, digest: reference }
      : { tag: reference }),
  });
  await session.expectStatus(fetched, [200], `reading the manifest ${where}`);
  const contentType = (fetched.response.headers.get('content-type') ?? '').split(';')[0]!.trim();
  if (contentType !== OCI_MANIFEST_MEDIA_TYPE) {
    await fetched.response.body?.cancel().catch(() => undefined);
    throw ociError(
      'ERR_OCI_MANIFEST_INVALID',
      `${where} is a ${JSON.stringify(contentType.slice(0, 100))}, not an OCI image manifest (is it a pack artifact?)`,
      {
        subject: where,
      },
    );
  }
  const bytes = await session.readBody(fetched, limits.maxManifestBytes, () =>
    ociError(
      'ERR_OCI_RESPONSE_TOO_LARGE',
      `the manifest ${where} is larger than ${limits.maxManifestBytes} bytes`,
      { subject: where },
    ),
  );
  const digest = sha256Digest(bytes);
  // A digest reference is checked against the bytes themselves; a tag against what the registry
  // says it served, when it says it (distribution spec: Docker-Content-Digest).
  if (reference.startsWith('sha256:') && digest !== reference) {
    throw ociError(
      'ERR_OCI_MANIFEST_DIGEST_MISMATCH',
      `the manifest served for ${where} hashes to ${digest}`,
      { subject: where },
    );
  }
  const header = fetched.response.headers.get('docker-content-digest');
  if (header !== null && header.trim() !== digest) {
    throw ociError(
      'ERR_OCI_MANIFEST_DIGEST_MISMATCH',
      `the manifest served for ${where} hashes to ${digest}, the registry says ${header.slice(0, 80)}`,
      {
        subject: where,
      },
    );
  }
  return { bytes, digest };
}

async function resolveWith(session: RegistrySession): Promise<ResolvedPackArtifact> {
  const ref = session.ref;
  let tag = ref.tag;
  if (!ref.digest && !tag) {
    tag = highestSemverTag(await listTags(session));
    if (!tag) {
      throw ociError(
        'ERR_OCI_NO_SEMVER_TAG',
        `${formatOciReference(ref)} has no tag that is a semantic version; name a tag or a digest`,
        {
          subject: formatOciReference(ref),
        },
      );
    }
  }
  const { bytes, digest } = await fetchManifest(session, ref.digest ?? tag!);
  const manifest = parsePackManifest(bytes, session.options.limits);
  // A semantic-version tag is a version claim: it must be the version the artifact says it holds
  // (push writes them equal). Installs then check agent.yaml against both.
  const claimed = artifactMetaOf(manifest).version;
  if (tag !== undefined && isSemver(tag) && claimed !== tag) {
    throw ociError(
      'ERR_OCI_MANIFEST_INVALID',
      `${formatOciReference({ ...ref, tag })} holds a pack whose version is ${claimed}, not ${tag}`,
      { subject: formatOciReference({ ...ref, tag }) },
    );
  }
  const layer = manifest.layers[0];
  return {
    reference: formatOciReference({ registry: ref.registry, repository: ref.repository, digest }),
    repository: formatOciReference({ registry: ref.registry, repository: ref.repository }),
    ...(ref.digest ? {} : { tag: tag! }),
    manifestDigest: digest,
    manifestSize: bytes.length,
    manifest,
    meta: artifactMetaOf(manifest),
    layer: { digest: layer.digest, size: layer.size },
  };
}

/**
 * Resolves a reference (a tag, a digest, or no tag: the highest semantic-version tag) to its
 * manifest, checked: digest, media types, one layer of the pack media type, bounds.
 */
export async function resolvePackArtifact(
  ref: string | OciReference,
  options: OciClientOptions = {},
): Promise<ResolvedPackArtifact> {
  const target = toReference(ref, options);
  return resolveWith(new RegistrySession(target, resolveOciClientOptions(options)));
}

export interface PullPackArtifactOptions extends OciClientOptions {
  /** Where the layer (the pack archive) is written. Its folder must exist; a file there is replaced. */
  to: string;
}

class DigestCounter extends Transform {
  readonly hash = createHash('sha256');
  bytes = 0;
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    callback(null, chunk);
  }
}

/**
 * Resolves the reference, then streams the layer to `to`: into a temporary file next to it,
 * counted and hashed on the way, renamed to `to` only when its size and sha256 are the
 * descriptor's. Any refusal leaves nothing behind. Redirects (to object storage) are followed;
 * the registry's credentials are not sent to another origin.
 */
export async function pullPackArtifact(
  ref: string | OciReference,
  options: PullPackArtifactOptions,
): Promise<PullPackArtifactResult> {
  if (typeof options?.to !== 'string' || options.to === '') {
    throw new StoreError(
      'ERR_INVALID_ARGUMENT',
      'pullPackArtifact needs options.to, the file to write the pack archive to',
    );
  }
  const target = toReference(ref, options);
  const session = new RegistrySession(target, resolveOciClientOptions(options));
  const resolved = await resolveWith(session);
  const { layer } = resolved;
  const deadline = startDownloadDeadline(session.options.downloadTimeoutMs);
  const fetched = await session.send({
    method: 'GET',
    url: session.url(`blobs/${layer.digest}`),
    headers: { 'accept-encoding': 'identity' },
    scopes: [repositoryScope(target.repository, 'pull')],
    followRedirects: true,
  });
  await session.expectStatus(fetched, [200], `downloading the pack layer ${layer.digest}`);
  const tooLong = () =>
    ociError(
      'ERR_OCI_BLOB_SIZE_MISMATCH',
      `the pack layer ${layer.digest} is longer than the ${layer.size} bytes its descriptor gives`,
      {
        subject: layer.digest,
      },
    );
  const temp = join(
    dirname(options.to),
    `.${basename(options.to)}.partial-${randomBytes(6).toString('hex')}`,
  );
  const counter = new DigestCounter();
  try {
    const body = bodyStream(fetched, {
      maxBytes: layer.size,
      idleTimeoutMs: session.options.idleTimeoutMs,
      deadline,
      tooLarge: tooLong,
      ...(session.options.signal ? { signal: session.options.signal } : {}),
    });
    try {
      await pipeline(body, counter, createWriteStream(temp, { flags: 'wx', mode: 0o644 }));
    } catch (error) {
      if (isStoreError(error)) throw error;
      const code = (error as NodeJS.ErrnoException)?.code;
      if (
        typeof code === 'string' &&
        /^E[A-Z]+$/.test(code) &&
        (error as { syscall?: string }).syscall
      ) {
        throw ociError('ERR_OCI_IO', `cannot write ${options.to}: ${(error as Error).message}`, {
          cause: error,
          subject: options.to,
        });
      }
      throw new StoreError(
        'ERR_STORE_FETCH',
        `the download of ${layer.digest} failed: ${String(error)}`,
        { cause: error, subject: layer.digest },
      );
    }
    if (counter.bytes !== layer.size) {
      throw ociError(
        'ERR_OCI_BLOB_SIZE_MISMATCH',
        `the pack layer ${layer.digest} is ${counter.bytes} bytes, its descriptor says ${layer.size}`,
        {
          subject: layer.digest,
        },
      );
    }
    const actual = `sha256:${counter.hash.digest('hex')}`;
    if (actual !== layer.digest) {
      throw ociError(
        'ERR_OCI_BLOB_DIGEST_MISMATCH',
        `the pack layer served for ${layer.digest} hashes to ${actual}`,
        {
          subject: layer.digest,
        },
      );
    }
    try {
      await rename(temp, options.to);
    } catch (cause) {
      throw ociError('ERR_OCI_IO', `cannot write ${options.to}: ${(cause as Error).message}`, {
        cause,
        subject: options.to,
      });
    }
  } catch (error) {
    fetched.controller.abort();
    await rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
  return { ...resolved, file: options.to };
}

/**
 * Pulls the layer into a private temporary folder (under `tmpDir`, default the OS's), hands the
 * checked archive to `use`, and removes the folder afterwards whatever happens: the shape an
 * install from `oci://` needs (pull, extract and verify, forget the archive).
 */
export async function withPulledPackArtifact<T>(
  ref: string | OciReference,
  options: OciClientOptions & { tmpDir?: string },
  use: (pulled: PullPackArtifactResult) => Promise<T>,
): Promise<T> {
  let dir: string;
  try {
    dir = await mkdtemp(join(options.tmpDir ?? tmpdir(), 'packwarden-oci-'));
  } catch (cause) {
    throw ociError('ERR_OCI_IO', `cannot create a temporary folder: ${(cause as Error).message}`, {
      cause,
    });
  }
  try {
    const pulled = await pullPackArtifact(ref, { ...options, to: join(dir, 'pack.tar.gz') });
    return await use(pulled);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
