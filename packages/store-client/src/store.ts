import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packwardenHome, parseStrictJson, readPackwardenEnv } from '@packwarden/pack-manifest';
import { INDEX_CACHE_KEY_MIN_BYTES, readCachedIndex, writeCachedIndex } from './cache.js';
import { abortError, StoreError } from './errors.js';
import { readBounded, request, statusError, type FetchLike } from './http.js';
import { readSmallFile } from './small-file.js';
import { attachStoreContext, type StoreContext } from './store-context.js';
import {
  agentHippoArtifactType,
  AgentHippoArtifactSchema,
  describeZodError,
  STATIC_STORE_FORMAT,
  StaticStoreArtifactSchema,
  StaticStoreVersionSchema,
  STORE_INDEX_LIMITS,
  type StaticStoreVersion,
} from './index-schema.js';
import { formatArtifactRef, type ArtifactRef, type ArtifactType } from './refs.js';
import { compareSemver } from './semver.js';
import { assertFetchable, assertNoDowngrade, parseStoreLocation } from './url-policy.js';

/** The AgentHippo store's index (the default store). */
export const DEFAULT_STORE_URL =
  'https://raw.githubusercontent.com/agenthippoai/agenthippo-store/main/store-index.json';
export const DEFAULT_STORE_REPO = 'agenthippoai/agenthippo-store';
export const DEFAULT_GITHUB_API_URL = 'https://api.github.com';
/** Folder (and tag prefix) of each artifact type in the AgentHippo store repository. */
export const AGENTHIPPO_TYPE_DIRS: Readonly<Record<ArtifactType, string>> = Object.freeze({
  pack: 'agent-packs',
  skill: 'skills',
  mcp: 'mcp',
  engine: 'engines',
});

export type Env = Record<string, string | undefined>;
/** `archive`: one local `.tar.gz` opened with `openPackArchive`. */
export type StoreKind = 'static' | 'agenthippo' | 'archive';

export interface StoreArtifact {
  type: ArtifactType;
  slug: string;
  displayName?: string | undefined;
  description?: string | undefined;
  tags?: string[] | undefined;
  author?: string | undefined;
  latestVersion: string;
  /** Every version, newest first (static stores; the AgentHippo index lists only the latest). */
  versions?: string[];
  updatedAt?: string | undefined;
}

export interface StoreProblem {
  /** Index of the row in the index document's `artifacts` array. */
  row: number;
  message: string;
}

/** Where one artifact version comes from, as `installPack` needs it. */
export type ArtifactSource =
  | {
      kind: 'static';
      url: URL;
      size: number;
      sha256: string;
      digest: string;
      signature?: string;
    }
  | {
      /** A local `.tar.gz` (`openPackArchive`): size and SHA-256 as read when it was opened. */
      kind: 'archive-file';
      url: URL;
      size: number;
      sha256: string;
    }
  | {
      kind: 'github-tarball';
      url: URL;
      tag: string;
      /** The artifact's folder inside the repository. */
      folder: string;
    };

export interface ResolvedArtifact {
  type: ArtifactType;
  slug: string;
  version: string;
  source: ArtifactSource;
}

export interface Store {
  kind: StoreKind;
  /** The index document's URL. */
  url: string;
  /** Rows of the index that were skipped, and why. */
  problems: StoreProblem[];
  /**
   * For operators, about this machine rather than the index: a cached index that was not believed
   * (and why), a cache folder narrowed to 0700, an index that could not be cached. None of them
   * changes what the store lists or installs; each costs at most one full download.
   */
  warnings: string[];
  list(filter?: { type?: ArtifactType }): StoreArtifact[];
  search(query: string, filter?: { type?: ArtifactType }): StoreArtifact[];
  info(ref: ArtifactRef): StoreArtifact | undefined;
  /** Where `ref` (its version, else the latest) is downloaded from. Throws `ERR_ARTIFACT_NOT_FOUND` / `ERR_VERSION_NOT_FOUND`. */
  resolve(ref: ArtifactRef): ResolvedArtifact;
}

export interface OpenStoreOptions {
  /** Index URL or path. Default: `PACKWARDEN_STORE_URL` / `AGENTHIPPO_STORE_URL`, else `DEFAULT_STORE_URL`. */
  url?: string;
  env?: Env;
  fetch?: FetchLike;
  /** Default `$PACKWARDEN_HOME/cache/store`; `false` disables caching. */
  cacheDir?: string | false;
  /**
   * Authenticates index cache entries (at least 32 bytes); only entries written under it are
   * believed. Without it the index is not cached at all (an entry no later process could believe
   * is not worth writing); archives still are. README "The index cache".
   */
  cacheKey?: Uint8Array;
  /** Default `PACKWARDEN_GITHUB_TOKEN`, `GITHUB_TOKEN`, `GH_TOKEN`. Sent to the GitHub API origin only. */
  githubToken?: string;
  /** Default `PACKWARDEN_GITHUB_API_URL`, else `https://api.github.com`. */
  githubApiUrl?: string;
  /** `owner/name`. Default `PACKWARDEN_STORE_REPO` / `AGENTHIPPO_STORE_REPO`, else `agenthippoai/agenthippo-store`. */
  repo?: string;
  /** Time to response headers, ms. Default 30,000. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * The index text and the URL it was finally read from (relative archive URLs resolve against it).
 * What the index cache had to say goes to `warnings`.
 */
async function loadIndexText(
  url: URL,
  ctx: StoreContext,
  warnings: string[],
): Promise<{ text: string; url: URL }> {
  const tooLarge = () =>
    new StoreError(
      'ERR_STORE_INDEX_TOO_LARGE',
      `the store index ${url.href} is larger than ${STORE_INDEX_LIMITS.maxBytes} bytes`,
      {
        subject: url.href,
      },
    );
  if (url.protocol === 'file:') {
    const path = fileURLToPath(url);
    try {
      const info = await stat(path);
      if (info.isDirectory())
        return await loadIndexText(
          new URL('index.json', `${url.href.replace(/\/?$/, '/')}`),
          ctx,
          warnings,
        );
      // The user names the store, so a symlink to its index is followed; a FIFO or a file that
      // grows past the bound while it is read is refused, not waited on or read unbounded.
      const read = readSmallFile(path, STORE_INDEX_LIMITS.maxBytes, { followSymlinks: true });
      if (!read.ok && (read.kind === 'too-large' || read.kind === 'grew')) throw tooLarge();
      if (!read.ok) throw new Error(read.problem, { cause: read.cause });
      return { text: read.bytes.toString('utf8'), url };
    } catch (cause) {
      if (cause instanceof StoreError) throw cause;
      throw new StoreError(
        'ERR_STORE_FETCH',
        `cannot read the store index ${path}: ${(cause as Error).message}`,
        {
          cause,
          subject: path,
        },
      );
    }
  }
  const cache =
    ctx.cacheDir === undefined || ctx.cacheKey === undefined
      ? undefined
      : { dir: ctx.cacheDir, key: ctx.cacheKey };
  // Trust boundary: the cache folder may have been written by someone else. Only an entry a holder
  // of `cacheKey` wrote for this URL, in files only this user can write, is revalidated; anything
  // else is fetched in full, as if there were no cache.
  const lookup = await readCachedIndex(cache, url.href);
  if (lookup.kind === 'refused') warnings.push(lookup.reason);
  const cached = lookup.kind === 'hit' ? lookup.entry : undefined;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (cached) headers['if-none-match'] = cached.etag;
  const fetched = await request(url, {
    fetch: ctx.fetch,
    headers,
    redirects: 'same-origin',
    timeoutMs: ctx.timeoutMs,
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  });
  const { response } = fetched;
  if (response.status === 304 && cached) {
    await response.body?.cancel().catch(() => undefined);
    return { text: cached.body, url: fetched.url };
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => undefined);
    throw statusError(url, response.status, 'the store index');
  }
  // The whole body within the timeout too: a server dripping one byte a minute is refused.
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    fetched.controller.abort();
  }, ctx.timeoutMs);
  let body: string;
  try {
    body = (await readBounded(response, STORE_INDEX_LIMITS.maxBytes, tooLarge)).toString('utf8');
  } catch (cause) {
    if (cause instanceof StoreError) throw cause;
    if (timedOut) {
      throw new StoreError(
        'ERR_STORE_TIMEOUT',
        `the store index ${url.href} did not arrive within ${ctx.timeoutMs} ms`,
        { cause },
      );
    }
    if (ctx.signal?.aborted) throw abortError(ctx.signal);
    throw new StoreError(
      'ERR_STORE_FETCH',
      `reading the store index ${url.href} failed: ${(cause as Error).message}`,
      { cause },
    );
  } finally {
    clearTimeout(timer);
  }
  const etag = response.headers.get('etag');
  if (etag) {
    const written = await writeCachedIndex(cache, { url: url.href, etag, body });
    if (written !== undefined) warnings.push(written);
  }
  return { text: body, url: fetched.url };
}

interface StaticRow {
  artifact: StoreArtifact;
  versions: Map<string, StaticStoreVersion>;
}

function searchScore(artifact: StoreArtifact, terms: string[]): number {
  let score = 0;
  for (const term of terms) {
    const slug = artifact.slug.toLowerCase();
    if (slug === term) score += 100;
    else if (slug.startsWith(term)) score += 50;
    else if (slug.includes(term)) score += 30;
    else if (artifact.displayName?.toLowerCase().includes(term)) score += 20;
    else if (artifact.tags?.some((t) => t.toLowerCase() === term)) score += 15;
    else if (artifact.description?.toLowerCase().includes(term)) score += 10;
    else if (artifact.author?.toLowerCase().includes(term)) score += 5;
    else return 0;
  }
  return score;
}

class StoreImpl implements Store {
  readonly problems: StoreProblem[] = [];
  readonly warnings: string[] = [];
  private readonly rows: StaticRow[] = [];

  constructor(
    readonly kind: StoreKind,
    readonly url: string,
    context: StoreContext,
    private readonly github: { api: URL; owner: string; repo: string } | undefined,
  ) {
    attachStoreContext(this, context);
  }

  addRow(row: StaticRow): void {
    this.rows.push(row);
  }

  list(filter: { type?: ArtifactType } = {}): StoreArtifact[] {
    return this.rows
      .map((r) => r.artifact)
      .filter((a) => !filter.type || a.type === filter.type)
      .sort((a, b) => a.type.localeCompare(b.type) || a.slug.localeCompare(b.slug));
  }

  search(query: string, filter: { type?: ArtifactType } = {}): StoreArtifact[] {
    const terms = query.toLowerCase().split(/\s+/).filter(Boolean);
    if (terms.length === 0) return this.list(filter);
    return this.list(filter)
      .map((artifact) => ({ artifact, score: searchScore(artifact, terms) }))
      .filter((s) => s.score > 0)
      .sort((a, b) => b.score - a.score || a.artifact.slug.localeCompare(b.artifact.slug))
      .map((s) => s.artifact);
  }

  info(ref: ArtifactRef): StoreArtifact | undefined {
    return this.row(ref)?.artifact;
  }

  private row(ref: ArtifactRef): StaticRow | undefined {
    return this.rows.find((r) => r.artifact.type === ref.type && r.artifact.slug === ref.slug);
  }

  resolve(ref: ArtifactRef): ResolvedArtifact {
    const row = this.row(ref);
    if (!row) {
      throw new StoreError(
        'ERR_ARTIFACT_NOT_FOUND',
        `${formatArtifactRef({ type: ref.type, slug: ref.slug })} is not in the store ${this.url}`,
        {
          subject: formatArtifactRef(ref),
        },
      );
    }
    const version = ref.version ?? row.artifact.latestVersion;
    if (this.kind === 'static') {
      const record = row.versions.get(version);
      if (!record) {
        throw new StoreError(
          'ERR_VERSION_NOT_FOUND',
          `${ref.type}/${ref.slug}@${version} is not in the store (versions: ${row.artifact.versions?.join(', ') || 'none'})`,
          { subject: formatArtifactRef({ ...ref, version }) },
        );
      }
      let url: URL;
      try {
        url = new URL(record.archive, this.url);
      } catch (cause) {
        throw new StoreError(
          'ERR_STORE_INDEX_INVALID',
          `archive URL ${JSON.stringify(record.archive)} is invalid`,
          { cause },
        );
      }
      // A remote index may only point at remote archives (never at this machine's files).
      const indexUrl = new URL(this.url);
      assertFetchable(url, 'archive', { allowFile: indexUrl.protocol === 'file:' });
      assertNoDowngrade(indexUrl, url, 'the archive URL');
      const source: ArtifactSource = {
        kind: 'static',
        url,
        size: record.size,
        sha256: record.sha256,
        digest: record.digest,
      };
      if (record.signature !== undefined) source.signature = record.signature;
      return { type: ref.type, slug: ref.slug, version, source };
    }
    const github = this.github!;
    const folder = `${AGENTHIPPO_TYPE_DIRS[ref.type]}/${ref.slug}`;
    const tag = `${folder}/v${version}`;
    const url = new URL(
      `repos/${encodeURIComponent(github.owner)}/${encodeURIComponent(github.repo)}/tarball/${tag.split('/').map(encodeURIComponent).join('/')}`,
      github.api.href.endsWith('/') ? github.api : new URL(`${github.api.href}/`),
    );
    return {
      type: ref.type,
      slug: ref.slug,
      version,
      source: { kind: 'github-tarball', url, tag, folder },
    };
  }
}

function parseRepo(repo: string): { owner: string; repo: string } {
  const match = /^([A-Za-z0-9_.-]{1,100})\/([A-Za-z0-9_.-]{1,100})$/.exec(repo);
  if (!match || repo.includes('..')) {
    throw new StoreError(
      'ERR_INVALID_ARGUMENT',
      `store repository ${JSON.stringify(repo)} is not owner/name`,
    );
  }
  return { owner: match[1]!, repo: match[2]! };
}

/** How many times each key occurs. */
function timesListed(keys: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const key of keys) counts.set(key, (counts.get(key) ?? 0) + 1);
  return counts;
}

/**
 * The `type/slug` of a row as any reader would key it, read from the raw row before a schema can
 * drop it: a row this client refuses (a field out of its bounds) may be one another reader
 * accepts, and then the two would install different rows under one name. Every row whose `type`
 * and `slug` are strings counts, its type through the AgentHippo aliases (`agent-pack`, `packs`).
 */
function rawRowKey(raw: unknown): string[] {
  if (typeof raw !== 'object' || raw === null) return [];
  const { type, slug } = raw as Record<string, unknown>;
  if (typeof type !== 'string' || typeof slug !== 'string') return [];
  return [`${agentHippoArtifactType(type) ?? type}/${slug}`];
}

/** The `version` of a raw version record whenever it is a string, valid or not (see `rawRowKey`). */
function rawVersion(raw: unknown): string[] {
  if (typeof raw !== 'object' || raw === null) return [];
  const { version } = raw as Record<string, unknown>;
  return typeof version === 'string' ? [version] : [];
}

/**
 * An artifact (or a version) the index lists more than once is ambiguous: a reader keeping the
 * first row and one keeping the last would install different archives under one name, as a
 * member named twice would (README "Lenient index parsing"). None of its rows is used.
 */
function listedMoreThanOnce(what: string, times: number): string {
  return `${what} is listed ${times} times; none of them is used (readers keeping the first or the last would disagree)`;
}

/** Loads a store's index. The document decides the kind: `format: "packwarden-store/1"` is a static store, `{version: 1, artifacts}` the AgentHippo store. */
export async function openStore(options: OpenStoreOptions = {}): Promise<Store> {
  const env = options.env ?? process.env;
  const location = options.url ?? readPackwardenEnv(env, 'STORE_URL') ?? DEFAULT_STORE_URL;
  const url = parseStoreLocation(location);
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const cacheDir =
    options.cacheDir === false
      ? undefined
      : (options.cacheDir ?? join(packwardenHome(env), 'cache', 'store'));
  if (
    options.cacheKey !== undefined &&
    (!(options.cacheKey instanceof Uint8Array) ||
      options.cacheKey.length < INDEX_CACHE_KEY_MIN_BYTES)
  ) {
    throw new StoreError(
      'ERR_INVALID_ARGUMENT',
      `cacheKey must be a Uint8Array of at least ${INDEX_CACHE_KEY_MIN_BYTES} bytes`,
    );
  }
  const context: StoreContext = {
    fetch: fetchImpl,
    env,
    cacheDir,
    ...(options.cacheKey === undefined ? {} : { cacheKey: options.cacheKey }),
    timeoutMs: options.timeoutMs ?? 30_000,
    signal: options.signal,
  };
  if (options.signal?.aborted) throw abortError(options.signal);
  const warnings: string[] = [];
  const { text, url: indexUrl } = await loadIndexText(url, context, warnings);
  let document: unknown;
  try {
    // The project's strict parser (pack-manifest README, "Strict JSON"): a member named twice
    // (`"sha256"` for one reader, another `"sha256"` for the next) is refused, never last-wins.
    document = parseStrictJson(text, {
      maxBytes: STORE_INDEX_LIMITS.maxBytes,
      what: `the store index ${url.href}`,
    });
  } catch (cause) {
    const code = (cause as { code?: unknown }).code;
    if (code === 'ERR_JSON_TOO_LARGE') {
      throw new StoreError(
        'ERR_STORE_INDEX_TOO_LARGE',
        `the store index ${url.href} is larger than ${STORE_INDEX_LIMITS.maxBytes} bytes`,
        { cause, subject: url.href },
      );
    }
    throw new StoreError(
      'ERR_STORE_INDEX_INVALID',
      `the store index ${url.href} is not strict JSON: ${(cause as Error).message}`,
      { cause, subject: url.href },
    );
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    throw new StoreError(
      'ERR_STORE_INDEX_INVALID',
      `the store index ${url.href} is not a JSON object`,
      { subject: url.href },
    );
  }
  const doc = document as Record<string, unknown>;
  if (!Array.isArray(doc.artifacts)) {
    throw new StoreError(
      'ERR_STORE_INDEX_INVALID',
      `the store index ${url.href} has no artifacts array`,
      { subject: url.href },
    );
  }
  if (doc.artifacts.length > STORE_INDEX_LIMITS.maxRows) {
    throw new StoreError(
      'ERR_STORE_INDEX_TOO_LARGE',
      `the store index lists more than ${STORE_INDEX_LIMITS.maxRows} artifacts`,
      {
        subject: url.href,
      },
    );
  }
  if (doc.format === STATIC_STORE_FORMAT) {
    const store = new StoreImpl('static', indexUrl.href, context, undefined);
    store.warnings.push(...warnings);
    const parsedRows = doc.artifacts.map((raw) => StaticStoreArtifactSchema.safeParse(raw));
    const rowsPerKey = timesListed(doc.artifacts.flatMap(rawRowKey));
    parsedRows.forEach((parsed, row) => {
      if (!parsed.success) {
        store.problems.push({ row, message: describeZodError(parsed.error) });
        return;
      }
      const key = `${parsed.data.type}/${parsed.data.slug}`;
      if (rowsPerKey.get(key)! > 1) {
        store.problems.push({ row, message: listedMoreThanOnce(key, rowsPerKey.get(key)!) });
        return;
      }
      const parsedVersions = parsed.data.versions.map((raw) =>
        StaticStoreVersionSchema.safeParse(raw),
      );
      const entriesPerVersion = timesListed(parsed.data.versions.flatMap(rawVersion));
      const versions = new Map<string, StaticStoreVersion>();
      parsedVersions.forEach((v, i) => {
        if (!v.success)
          store.problems.push({ row, message: `versions.${i}: ${describeZodError(v.error)}` });
        else if (entriesPerVersion.get(v.data.version)! > 1)
          store.problems.push({
            row,
            message: `versions.${i}: ${listedMoreThanOnce(`${key}@${v.data.version}`, entriesPerVersion.get(v.data.version)!)}`,
          });
        else versions.set(v.data.version, v.data);
      });
      if (versions.size === 0) {
        store.problems.push({ row, message: `${parsed.data.slug}: no usable version` });
        return;
      }
      const { versions: _raw, ...rest } = parsed.data;
      const sorted = [...versions.keys()].sort((a, b) => compareSemver(b, a));
      const artifact: StoreArtifact = { ...rest, versions: sorted };
      if (!versions.has(artifact.latestVersion)) {
        store.problems.push({
          row,
          message: `${rest.slug}: latestVersion ${rest.latestVersion} is not listed; using ${sorted[0]}`,
        });
        artifact.latestVersion = sorted[0]!;
      }
      for (const key of Object.keys(artifact) as (keyof StoreArtifact)[])
        if (artifact[key] === undefined) delete artifact[key];
      store.addRow({ artifact, versions });
    });
    return store;
  }
  if (doc.version === 1 && doc.format === undefined) {
    const github = {
      api: new URL(
        options.githubApiUrl ?? readPackwardenEnv(env, 'GITHUB_API_URL') ?? DEFAULT_GITHUB_API_URL,
      ),
      ...parseRepo(options.repo ?? readPackwardenEnv(env, 'STORE_REPO') ?? DEFAULT_STORE_REPO),
    };
    assertFetchable(github.api, 'GitHub API', { allowFile: false });
    const token =
      options.githubToken ??
      readPackwardenEnv(env, 'GITHUB_TOKEN') ??
      (env.GITHUB_TOKEN || env.GH_TOKEN || undefined);
    if (token) context.githubToken = { value: token, origin: github.api.origin };
    const store = new StoreImpl('agenthippo', indexUrl.href, context, github);
    store.warnings.push(...warnings);
    const parsedRows = doc.artifacts.map((raw) => AgentHippoArtifactSchema.safeParse(raw));
    const rowsPerKey = timesListed(doc.artifacts.flatMap(rawRowKey));
    parsedRows.forEach((parsed, row) => {
      if (!parsed.success) {
        store.problems.push({ row, message: describeZodError(parsed.error) });
        return;
      }
      const { id: _id, ...data } = parsed.data;
      const key = `${data.type}/${data.slug}`;
      if (rowsPerKey.get(key)! > 1) {
        store.problems.push({ row, message: listedMoreThanOnce(key, rowsPerKey.get(key)!) });
        return;
      }
      const artifact: StoreArtifact = {
        type: data.type,
        slug: data.slug,
        latestVersion: data.latestVersion,
      };
      if (data.displayName) artifact.displayName = data.displayName;
      if (data.description) artifact.description = data.description;
      if (data.tags) artifact.tags = data.tags;
      if (data.author) artifact.author = data.author;
      if (data.updatedAt) artifact.updatedAt = data.updatedAt;
      store.addRow({ artifact, versions: new Map() });
    });
    return store;
  }
  throw new StoreError(
    'ERR_STORE_INDEX_INVALID',
    `${url.href} is neither a packwarden static store index (format "${STATIC_STORE_FORMAT}") nor an AgentHippo store index (version 1)`,
    { subject: url.href },
  );
}
