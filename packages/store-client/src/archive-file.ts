import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  DEFAULT_MANIFEST_MAX_BYTES,
  MANIFEST_FILE,
  parsePackManifest,
} from '@packwarden/pack-manifest';
import { writeFileAtomic } from '@packwarden/pack-manifest/fs';
import { loadBuildManifest, packArchive } from './build.js';
import { isStoreError, StoreError } from './errors.js';
import { resolveExtractLimits, type ExtractLimits } from './limits.js';
import type { ArtifactRef } from './refs.js';
import type { Env, ResolvedArtifact, Store, StoreArtifact } from './store.js';
import { attachStoreContext } from './store-context.js';
import { inflateTar } from './tar-budget.js';
import { TarReader } from './tar-reader.js';

export interface ExportPackOptions {
  /** Also write the archive to this file (atomically: a temporary file, then a rename). */
  out?: string;
}

export interface ExportedPack {
  slug: string;
  version: string;
  /** The `.tar.gz` bytes: the same bytes `buildStaticStore` serves for this pack. */
  archive: Buffer;
  size: number;
  /** SHA-256 of `archive`. */
  sha256: string;
  /** Pack digest v1 of the pack. */
  digest: string;
  signed: boolean;
  /** The file written, with `out`. */
  file?: string;
}

/**
 * The byte-reproducible `.tar.gz` of one pack folder (`packwarden pack export`): exactly the
 * archive a static store built from the same folder serves (sorted entries, fixed mtime, owner
 * 0:0, modes 0644/0755, README "buildStaticStore"), so the same content gives the same bytes
 * whatever the mtimes, owners or umask. The folder must hold a valid `agent.yaml`
 * (`ERR_BUILD_PACK_INVALID`) and no symlink (`ERR_BUILD_UNSUPPORTED_ENTRY`).
 */
export async function exportPack(
  packDir: string,
  options: ExportPackOptions = {},
): Promise<ExportedPack> {
  const dir = resolve(packDir);
  const manifest = loadBuildManifest(dir);
  let built;
  try {
    built = await packArchive(dir);
  } catch (cause) {
    if (isStoreError(cause)) throw cause;
    throw new StoreError('ERR_BUILD_IO', `cannot read ${dir}: ${(cause as Error).message}`, {
      cause,
    });
  }
  const result: ExportedPack = {
    slug: manifest.metadata.name,
    version: manifest.metadata.version,
    archive: built.archive,
    size: built.archive.length,
    sha256: createHash('sha256').update(built.archive).digest('hex'),
    digest: built.digest,
    signed: built.signed,
  };
  if (options.out !== undefined) {
    const file = resolve(options.out);
    try {
      await mkdir(dirname(file), { recursive: true });
      await writeFileAtomic(file, built.archive, { mode: 0o644 });
    } catch (cause) {
      throw new StoreError('ERR_BUILD_IO', `cannot write ${file}: ${(cause as Error).message}`, {
        cause,
      });
    }
    result.file = file;
  }
  return result;
}

export interface OpenPackArchiveOptions {
  env?: Env;
  /** Largest archive file accepted. Default 1 GiB. */
  maxBytes?: number;
  /** Bounds for reading `agent.yaml` out of the archive. */
  limits?: Partial<ExtractLimits>;
  signal?: AbortSignal;
}

/** `./agent.yaml` and `agent.yaml` are the same root entry; nothing else names the manifest. */
function isRootManifest(path: string): boolean {
  return path.replace(/^(\.\/)+/, '') === MANIFEST_FILE;
}

/**
 * Reads the root `agent.yaml` out of a `.tar.gz` without writing anything: the same gzip and tar
 * readers as extraction, with its size, ratio and header bounds, stopping at the manifest.
 */
async function readArchivedManifest(
  file: string,
  limits: ExtractLimits,
  signal: AbortSignal | undefined,
): Promise<string> {
  const reader = new TarReader(limits);
  let capture: Buffer[] | undefined;
  let captured = 0;
  let manifest: Buffer | undefined;
  const source = createReadStream(file, { highWaterMark: 64 * 1024 });
  try {
    for await (const piece of inflateTar(source, limits, signal)) {
      reader.push(piece, (event) => {
        if (event.kind === 'entry') {
          if (event.entry.type === 'file' && isRootManifest(event.entry.path)) capture = [];
        } else if (event.kind === 'data' && capture) {
          captured += event.chunk.length;
          if (captured > DEFAULT_MANIFEST_MAX_BYTES) {
            throw new StoreError(
              'ERR_PACK_INVALID',
              `the archive's ${MANIFEST_FILE} is larger than ${DEFAULT_MANIFEST_MAX_BYTES} bytes`,
            );
          }
          capture.push(Buffer.from(event.chunk));
        } else if (event.kind === 'entry-end' && capture) {
          manifest ??= Buffer.concat(capture);
          capture = undefined;
        }
      });
      if (manifest) break;
    }
  } catch (error) {
    if (isStoreError(error)) throw error;
    throw new StoreError('ERR_STORE_FETCH', `cannot read ${file}: ${(error as Error).message}`, {
      cause: error,
      subject: file,
    });
  } finally {
    source.destroy();
  }
  if (!manifest) {
    throw new StoreError(
      'ERR_PACK_INVALID',
      `${file} holds no ${MANIFEST_FILE} at its root (a pack archive is flat: the output of \`packwarden pack export\`)`,
      { subject: file },
    );
  }
  return manifest.toString('utf8');
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file, { highWaterMark: 64 * 1024 }))
    hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * A local `.tar.gz` (e.g. from `exportPack`) as a one-pack store, for `installPack`: the archive
 * is read once here (its `agent.yaml` names the pack; its size and SHA-256 are recorded) and
 * installed with every check of a store install (size and SHA-256 again while streaming, so a
 * file changed in between is refused; hostile-archive extraction; the manifest naming the same
 * pack; the signature when required or when a trust root is given). There is no index, so no
 * pack digest to compare: `pack.sig` is what vouches for the content.
 */
export async function openPackArchive(
  file: string,
  options: OpenPackArchiveOptions = {},
): Promise<Store> {
  const path = resolve(file);
  const maxBytes = options.maxBytes ?? 1024 * 1024 * 1024;
  const limits = resolveExtractLimits(options.limits);
  let info;
  try {
    info = await stat(path);
  } catch (cause) {
    throw new StoreError('ERR_STORE_FETCH', `cannot read ${path}: ${(cause as Error).message}`, {
      cause,
      subject: path,
    });
  }
  if (!info.isFile()) {
    throw new StoreError('ERR_STORE_FETCH', `${path} is not a file`, { subject: path });
  }
  if (info.size > maxBytes) {
    throw new StoreError(
      'ERR_DOWNLOAD_TOO_LARGE',
      `${path} is larger than ${maxBytes} bytes (maxBytes)`,
      { subject: path },
    );
  }
  const text = await readArchivedManifest(path, limits, options.signal);
  let manifest;
  try {
    manifest = parsePackManifest(text, { file: `${MANIFEST_FILE} in ${path}` });
  } catch (cause) {
    throw new StoreError('ERR_PACK_INVALID', `${path}: ${(cause as Error).message}`, {
      cause,
      subject: path,
    });
  }
  let sha256: string;
  try {
    sha256 = await sha256Of(path);
  } catch (cause) {
    throw new StoreError('ERR_STORE_FETCH', `cannot read ${path}: ${(cause as Error).message}`, {
      cause,
      subject: path,
    });
  }
  const { name: slug, version } = manifest.metadata;
  const url = pathToFileURL(path);
  const artifact: StoreArtifact = {
    type: 'pack',
    slug,
    latestVersion: version,
    versions: [version],
  };
  if (manifest.metadata.description) artifact.description = manifest.metadata.description;
  const resolved: ResolvedArtifact = {
    type: 'pack',
    slug,
    version,
    source: { kind: 'archive-file', url, size: info.size, sha256 },
  };
  const matches = (ref: ArtifactRef) => ref.type === 'pack' && ref.slug === slug;
  const store: Store = {
    kind: 'archive',
    url: url.href,
    problems: [],
    warnings: [],
    list: (filter = {}) => (filter.type === undefined || filter.type === 'pack' ? [artifact] : []),
    search: (query, filter = {}) =>
      (filter.type === undefined || filter.type === 'pack') &&
      query
        .toLowerCase()
        .split(/\s+/)
        .every(
          (word) =>
            slug.includes(word) || (artifact.description ?? '').toLowerCase().includes(word),
        )
        ? [artifact]
        : [],
    info: (ref) => (matches(ref) ? artifact : undefined),
    resolve: (ref) => {
      if (!matches(ref)) {
        throw new StoreError(
          'ERR_ARTIFACT_NOT_FOUND',
          `${path} holds pack/${slug}, not ${ref.type}/${ref.slug}`,
        );
      }
      if (ref.version !== undefined && ref.version !== version) {
        throw new StoreError(
          'ERR_VERSION_NOT_FOUND',
          `${path} holds ${slug}@${version}, not ${slug}@${ref.version}`,
        );
      }
      return resolved;
    },
  };
  return attachStoreContext(store, {
    fetch: globalThis.fetch,
    env: options.env ?? process.env,
    cacheDir: undefined,
    timeoutMs: 30_000,
    signal: options.signal,
  });
}
