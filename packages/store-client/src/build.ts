import { createHash } from 'node:crypto';
import { lstat, mkdir, readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import {
  computePackDigest,
  digestManifest,
  DIGEST_EXCLUDED_PATH as PACK_SIGNATURE_FILE,
  type PackDigestEntry,
} from '@packwarden/pack-digest';
import { findPackFolders, isPackManifestError, loadPackManifest } from '@packwarden/pack-manifest';
import { writeFileAtomic } from '@packwarden/pack-manifest/fs';
import { checkArchivePath, foldName } from './archive-path.js';
import { SIGNATURE_FILE_MAX_BYTES } from './artifact-checks.js';
import { StoreError } from './errors.js';
import { STATIC_STORE_FORMAT, type StaticStoreIndex } from './index-schema.js';
import { DEFAULT_EXTRACT_LIMITS } from './limits.js';
import { PathRegistry } from './path-registry.js';
import { isSlug } from './refs.js';
import { compareSemver } from './semver.js';
import { readSmallFile } from './small-file.js';

export interface BuildStaticStoreOptions {
  /** Output folder: `index.json` and `packs/<slug>/<slug>-<version>.tar.gz`. */
  out: string;
  /** Absolute base for archive URLs in the index; default: URLs relative to `index.json`. */
  baseUrl?: string;
}

export interface BuiltPack {
  slug: string;
  version: string;
  /** The archive's URL as written in the index. */
  archive: string;
  size: number;
  sha256: string;
  digest: string;
  signed: boolean;
}

export interface BuildStaticStoreResult {
  indexFile: string;
  packs: BuiltPack[];
  /** Engines found in `<dir>/engines/` (README "Engines"); `digest` is the engine digest. */
  engines: BuiltPack[];
}

/** Every archive is stamped with this time (2000-01-01T00:00:00Z), owner 0:0 and no user names. */
export const REPRODUCIBLE_MTIME = new Date(946_684_800_000);

async function realNames(root: string): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  const walk = async (relative: string): Promise<void> => {
    for (const entry of await readdir(join(root, relative), { withFileTypes: true })) {
      const path = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(path);
      else names.set(path.normalize('NFC'), path);
    }
  };
  await walk('');
  return names;
}

function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** pack-signature's bound on engine metadata files (`engine.manifest.json`, `package.json`). */
const ENGINE_METADATA_MAX_BYTES = 64 * 1024;

/** A small file of an artifact being built, bounded: anything else is `ERR_BUILD_PACK_CHANGED`. */
function readBuildFile(dir: string, name: string, maxBytes: number): string {
  const read = readSmallFile(join(dir, name), maxBytes);
  if (!read.ok) {
    throw new StoreError(
      'ERR_BUILD_PACK_CHANGED',
      `${dir}: cannot read ${name} (${read.problem}); it was readable when the folder was checked`,
      { subject: name },
    );
  }
  return read.bytes.toString('utf8');
}

/** A pack folder's `agent.yaml`, for a build or an export: anything wrong is `ERR_BUILD_PACK_INVALID`. */
export function loadBuildManifest(dir: string): ReturnType<typeof loadPackManifest>['manifest'] {
  try {
    return loadPackManifest(dir).manifest;
  } catch (cause) {
    throw new StoreError('ERR_BUILD_PACK_INVALID', `${dir}: ${(cause as Error).message}`, {
      cause,
      subject: dir,
    });
  }
}

/**
 * The names extraction would refuse (archive-path.ts, path-registry.ts: `CON`, `a:b`, a trailing
 * dot, `README.md` beside `readme.md`, NFC twins, too long or too deep), refused here with the
 * same rules: a store, an export or a push must not publish an archive that no install accepts.
 */
function refuseUninstallableNames(dir: string, files: { path: string }[]): void {
  const registry = new PathRegistry();
  for (const file of files) {
    try {
      registry.add(checkArchivePath(file.path, DEFAULT_EXTRACT_LIMITS), 'file', foldName);
    } catch (cause) {
      throw new StoreError(
        'ERR_BUILD_UNSUPPORTED_ENTRY',
        `${dir}: ${(cause as Error).message}; extraction refuses such a name (on every platform, so that a pack installs everywhere)`,
        { cause, subject: file.path },
      );
    }
  }
}

/** One pack folder as a byte-reproducible .tar.gz: sorted entries, fixed times and owners, 0644/0755. */
export async function packArchive(
  dir: string,
): Promise<{ archive: Buffer; digest: string; signed: boolean; entries: PackDigestEntry[] }> {
  const digest = await computePackDigest(dir);
  const files = digest.entries.map((e) => ({
    path: e.path,
    exec: e.mode === 'x',
    sha256: e.sha256 as string | undefined,
    size: e.size,
    mode: e.mode,
  }));
  for (const f of files) {
    if (f.mode === 'l') {
      throw new StoreError(
        'ERR_BUILD_UNSUPPORTED_ENTRY',
        `${dir}: ${f.path} is a symlink; stores carry regular files only`,
        {
          subject: f.path,
        },
      );
    }
  }
  refuseUninstallableNames(dir, files);
  const sig = await lstat(join(dir, PACK_SIGNATURE_FILE)).catch(() => undefined);
  if (sig && !sig.isFile()) {
    throw new StoreError('ERR_BUILD_UNSUPPORTED_ENTRY', `${dir}: pack.sig is not a regular file`, {
      subject: PACK_SIGNATURE_FILE,
    });
  }
  if (sig)
    files.push({
      path: PACK_SIGNATURE_FILE,
      exec: false,
      sha256: undefined,
      size: SIGNATURE_FILE_MAX_BYTES,
      mode: 'f',
    });
  files.sort((a, b) => byteOrder(a.path, b.path));
  const directories = new Set<string>();
  for (const f of files) {
    const parts = f.path.split('/');
    for (let i = 1; i < parts.length; i++) directories.add(parts.slice(0, i).join('/'));
  }
  const entries = [
    ...[...directories].map((path) => ({ path, directory: true as const })),
    ...files.map((f) => ({ ...f, directory: false as const })),
  ].sort((a, b) => byteOrder(a.path, b.path));

  // Digest paths are NFC; the names on disk may not be (NFD from macOS): read through the real
  // name, write the NFC one, so that the same pack gives the same archive everywhere.
  const onDisk = await realNames(dir);
  // Loaded here: reading stores and installing never need tar-stream.
  const tarStream = await import('tar-stream');
  // tar-stream is CommonJS: Node names its exports, but a bundle (the packwarden CLI's) may offer
  // them only on `default`.
  const tarPack =
    tarStream.pack ?? (tarStream as unknown as { default: typeof tarStream }).default.pack;
  const tar = tarPack();
  const chunks: Buffer[] = [];
  tar.on('data', (c: unknown) => {
    chunks.push(c as Buffer);
  });
  const ended = new Promise<void>((res, rej) => {
    tar.on('end', () => res());
    tar.on('error', rej);
  });
  const common = { mtime: REPRODUCIBLE_MTIME, uid: 0, gid: 0, uname: '', gname: '' };
  for (const entry of entries) {
    if (entry.directory) {
      tar.entry({ ...common, name: `${entry.path}/`, type: 'directory', mode: 0o755 });
      continue;
    }
    // At most the size the digest saw (pack.sig: a token's bound), never through a symlink or
    // from a FIFO swapped in since: a pack folder is the author's, and may be hostile.
    const read = readSmallFile(join(dir, onDisk.get(entry.path) ?? entry.path), entry.size);
    const content = read.ok ? read.bytes : undefined;
    if (
      content === undefined ||
      (entry.sha256 !== undefined &&
        createHash('sha256').update(content).digest('hex') !== entry.sha256)
    ) {
      throw new StoreError(
        'ERR_BUILD_PACK_CHANGED',
        `${dir}: ${entry.path} changed while the store was being built${read.ok ? '' : ` (${read.problem})`}`,
        {
          subject: entry.path,
        },
      );
    }
    await new Promise<void>((res, rej) =>
      tar.entry(
        {
          ...common,
          name: entry.path,
          type: 'file',
          mode: entry.exec ? 0o755 : 0o644,
          size: content.length,
        },
        content,
        (e) => (e ? rej(e) : res()),
      ),
    );
  }
  tar.finalize();
  await ended;
  const archive = gzipSync(Buffer.concat(chunks), { level: 9 });
  archive[9] = 3; // gzip OS byte: "Unix" on every platform, so Windows builds give the same bytes
  return { archive, digest: digest.digest, signed: sig !== undefined, entries: digest.entries };
}

/**
 * Writes one artifact's archive to `<out>/<folder>/<slug>/<slug>-<version>.tar.gz` (README
 * "buildStaticStore"); returns what its index row says of it: the URL (relative to `index.json`
 * unless `base`), size and SHA-256.
 */
async function writeStoreArchive(
  out: string,
  base: string | undefined,
  folder: 'packs' | 'engines',
  slug: string,
  version: string,
  archive: Buffer,
): Promise<Pick<BuiltPack, 'archive' | 'size' | 'sha256'>> {
  const relative = `${folder}/${slug}/${slug}-${version}.tar.gz`;
  try {
    await mkdir(join(out, folder, slug), { recursive: true });
    await writeFileAtomic(join(out, relative), archive, { mode: 0o644 });
  } catch (cause) {
    throw new StoreError(
      'ERR_BUILD_IO',
      `cannot write ${join(out, relative)}: ${(cause as Error).message}`,
      { cause },
    );
  }
  return {
    archive: base ? new URL(relative, base).href : relative,
    size: archive.length,
    sha256: createHash('sha256').update(archive).digest('hex'),
  };
}

/**
 * Builds a static store from a folder of packs (`<dir>/<pack>/agent.yaml` or
 * `<dir>/<pack>/<version>/agent.yaml`, or `<dir>/agent.yaml` for one pack). Same packs in, same
 * bytes out.
 */
export async function buildStaticStore(
  packsDir: string,
  options: BuildStaticStoreOptions,
): Promise<BuildStaticStoreResult> {
  const root = resolve(packsDir);
  const out = resolve(options.out);
  let dirs: string[];
  try {
    // The finder `pack verify --all` uses: a store holds exactly the packs a verify saw.
    dirs = await findPackFolders(root);
  } catch (cause) {
    // A symlink to a pack folder is neither followed nor left out: name what to change.
    if (isPackManifestError(cause) && cause.code === 'ERR_PACK_SEARCH_SYMLINK')
      throw new StoreError('ERR_BUILD_UNSUPPORTED_ENTRY', cause.message, {
        cause,
        subject: cause.file,
      });
    throw new StoreError('ERR_BUILD_IO', `cannot read ${root}: ${(cause as Error).message}`, {
      cause,
    });
  }
  const engineDirs = await findEngineFolders(root);
  if (dirs.length === 0 && engineDirs.length === 0)
    throw new StoreError(
      'ERR_BUILD_NO_PACKS',
      `no agent.yaml found in ${root} or its subfolders, and no engines/<id>/engine.manifest.json`,
    );
  const base = options.baseUrl
    ? options.baseUrl.endsWith('/')
      ? options.baseUrl
      : `${options.baseUrl}/`
    : undefined;
  if (base) new URL(base);

  const built = new Map<
    string,
    {
      pack: BuiltPack;
      manifest: ReturnType<typeof loadPackManifest>['manifest'];
      signature?: string;
    }
  >();
  for (const dir of dirs) {
    const manifest = loadBuildManifest(dir);
    const { name: slug, version } = manifest.metadata;
    const key = `${slug}@${version}`;
    if (built.has(key))
      throw new StoreError('ERR_BUILD_DUPLICATE', `${key} appears twice (${dir})`, {
        subject: key,
      });
    const { archive, digest, signed } = await packArchive(dir);
    const pack: BuiltPack = {
      slug,
      version,
      ...(await writeStoreArchive(out, base, 'packs', slug, version, archive)),
      digest,
      signed,
    };
    const entry: { pack: BuiltPack; manifest: typeof manifest; signature?: string } = {
      pack,
      manifest,
    };
    if (signed)
      entry.signature = readBuildFile(dir, PACK_SIGNATURE_FILE, SIGNATURE_FILE_MAX_BYTES).trim();
    built.set(key, entry);
  }

  const bySlug = new Map<string, (typeof built extends Map<string, infer V> ? V : never)[]>();
  for (const entry of built.values())
    bySlug.set(entry.pack.slug, [...(bySlug.get(entry.pack.slug) ?? []), entry]);
  const index: StaticStoreIndex = { format: STATIC_STORE_FORMAT, artifacts: [] };
  for (const slug of [...bySlug.keys()].sort()) {
    const entries = bySlug.get(slug)!.sort((a, b) => compareSemver(b.pack.version, a.pack.version));
    const latest = entries.find((e) => !e.pack.version.includes('-')) ?? entries[0]!;
    const meta = latest.manifest.metadata as Record<string, unknown>;
    const artifact: StaticStoreIndex['artifacts'][number] = {
      type: 'pack',
      slug,
      latestVersion: latest.pack.version,
      versions: entries.map((e) => {
        const v: StaticStoreIndex['artifacts'][number]['versions'][number] = {
          version: e.pack.version,
          archive: e.pack.archive,
          size: e.pack.size,
          sha256: e.pack.sha256,
          digest: e.pack.digest,
        };
        if (e.signature !== undefined) v.signature = e.signature;
        return v;
      }),
    };
    if (typeof meta.displayName === 'string') artifact.displayName = meta.displayName;
    if (typeof meta.description === 'string') artifact.description = meta.description;
    if (typeof meta.author === 'string') artifact.author = meta.author;
    if (Array.isArray(meta.tags) && meta.tags.every((t) => typeof t === 'string'))
      artifact.tags = meta.tags as string[];
    index.artifacts.push(artifact);
  }
  const engines = await buildEngines(engineDirs, out, base);
  for (const engine of engines) index.artifacts.push(engine.artifact);
  const indexFile = join(out, 'index.json');
  try {
    await writeFileAtomic(indexFile, `${JSON.stringify(index, null, 2)}\n`, { mode: 0o644 });
  } catch (cause) {
    throw new StoreError('ERR_BUILD_IO', `cannot write ${indexFile}: ${(cause as Error).message}`, {
      cause,
    });
  }
  const packs = [...built.values()]
    .map((e) => e.pack)
    .sort((a, b) => a.slug.localeCompare(b.slug) || compareSemver(a.version, b.version));
  return { indexFile, packs, engines: engines.flatMap((engine) => engine.built) };
}

/**
 * Engine folders of a store's source: `<dir>/engines/<slug>/` or `<dir>/engines/<slug>/<version>/`
 * holding `engine.manifest.json` (the AgentHippo store's layout). A pack's own `engines/` folder
 * is part of that pack, never an artifact of its own: a `<dir>` that is a pack has none.
 */
async function findEngineFolders(root: string): Promise<string[]> {
  const isFile = async (path: string) =>
    (await lstat(path).catch(() => undefined))?.isFile() === true;
  if (await isFile(join(root, 'agent.yaml'))) return [];
  const base = join(root, 'engines');
  const found: string[] = [];
  const subfolders = async (dir: string) =>
    (await readdir(dir, { withFileTypes: true }).catch(() => []))
      .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.'))
      .map((entry) => join(dir, entry.name))
      .sort();
  for (const dir of await subfolders(base)) {
    if (await isFile(join(dir, 'engine.manifest.json'))) found.push(dir);
    else
      for (const version of await subfolders(dir))
        if (await isFile(join(version, 'engine.manifest.json'))) found.push(version);
  }
  return found;
}

/** Archives and index rows of engines: identity from pack-signature's one rule, engine digest. */
async function buildEngines(
  dirs: string[],
  out: string,
  base: string | undefined,
): Promise<Array<{ artifact: StaticStoreIndex['artifacts'][number]; built: BuiltPack[] }>> {
  if (dirs.length === 0) return [];
  const { ENGINE_SIGNATURE_FILE, readEngineIdentity } = await import('@packwarden/pack-signature');
  const bySlug = new Map<
    string,
    { built: BuiltPack; signature?: string; meta: Record<string, unknown> }[]
  >();
  for (const dir of dirs) {
    const identity = readEngineIdentity(dir);
    if ('problem' in identity)
      throw new StoreError('ERR_BUILD_PACK_INVALID', `${dir}: ${identity.problem}`, {
        subject: dir,
      });
    if (!isSlug(identity.id))
      throw new StoreError(
        'ERR_BUILD_PACK_INVALID',
        `${dir}: engine id ${JSON.stringify(identity.id)} is not a store slug (kebab-case)`,
        { subject: dir },
      );
    if ((await lstat(join(dir, PACK_SIGNATURE_FILE)).catch(() => undefined)) !== undefined)
      throw new StoreError(
        'ERR_BUILD_PACK_INVALID',
        `${dir}: an engine folder holds a pack.sig, which no engine digest covers`,
        { subject: dir },
      );
    const { id: slug, version } = identity;
    const versions = bySlug.get(slug) ?? [];
    if (versions.some((entry) => entry.built.version === version))
      throw new StoreError(
        'ERR_BUILD_DUPLICATE',
        `engine ${slug}@${version} appears twice (${dir})`,
        {
          subject: `${slug}@${version}`,
        },
      );
    const { archive, entries } = await packArchive(dir);
    const signature = entries.find((entry) => entry.path === ENGINE_SIGNATURE_FILE);
    const built: BuiltPack = {
      slug,
      version,
      ...(await writeStoreArchive(out, base, 'engines', slug, version, archive)),
      // The engine digest: Pack digest v1 without the root engine.sig (pack-signature README).
      digest: digestManifest(entries.filter((entry) => entry !== signature)),
      signed: signature !== undefined,
    };
    const meta = JSON.parse(
      readBuildFile(dir, 'engine.manifest.json', ENGINE_METADATA_MAX_BYTES),
    ) as Record<string, unknown>;
    versions.push({
      built,
      meta,
      ...(signature !== undefined
        ? { signature: readBuildFile(dir, ENGINE_SIGNATURE_FILE, SIGNATURE_FILE_MAX_BYTES).trim() }
        : {}),
    });
    bySlug.set(slug, versions);
  }
  return [...bySlug.keys()].sort().map((slug) => {
    const entries = bySlug
      .get(slug)!
      .sort((a, b) => compareSemver(b.built.version, a.built.version));
    const latest = entries.find((e) => !e.built.version.includes('-')) ?? entries[0]!;
    const artifact: StaticStoreIndex['artifacts'][number] = {
      type: 'engine',
      slug,
      latestVersion: latest.built.version,
      versions: entries.map((e) => ({
        version: e.built.version,
        archive: e.built.archive,
        size: e.built.size,
        sha256: e.built.sha256,
        digest: e.built.digest,
        ...(e.signature !== undefined ? { signature: e.signature } : {}),
      })),
    };
    const { displayName, description } = latest.meta;
    if (typeof displayName === 'string') artifact.displayName = displayName.slice(0, 200);
    if (typeof description === 'string') artifact.description = description.slice(0, 4000);
    return { artifact, built: entries.map((e) => e.built) };
  });
}
