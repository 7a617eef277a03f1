import { parseStrictJson } from '@packwarden/pack-manifest';
import { readBoundedFile, writeFileAtomic } from '@packwarden/pack-manifest/fs';
import { StoreError } from './errors.js';

/** The one lockfile format (README "Lockfile"). */
export const LOCKFILE_VERSION = 1;

/** Bounds: a lockfile is a small document; anything larger is refused unread. */
export const LOCKFILE_LIMITS = { maxBytes: 4 * 1024 * 1024, maxEntries: 10_000 } as const;

/** What one install recorded, under the key `type/slug`. */
export interface LockEntry {
  version: string;
  /** The store index URL, or the `oci://HOST/REPO` repository. */
  source: string;
  /** The archive URL, or `oci://HOST/REPO@sha256:…` (the manifest digest). */
  resolved: string;
  /** SHA-256 (64 hex) of the archive installed. */
  archiveSha256: string;
  /** Pack digest v1 (64 hex) of what was installed. */
  packDigest: string;
  /** The `kid` whose signature verified at install, else null. */
  signer: string | null;
}

export interface Lockfile {
  lockfileVersion: 1;
  packs: Record<string, LockEntry>;
}

const HEX64 = /^[0-9a-f]{64}$/;
const KEY = /^(pack|skill|mcp|engine)\/[a-z0-9][a-z0-9._-]{0,127}$/;
const ENTRY_FIELDS = [
  'version',
  'source',
  'resolved',
  'archiveSha256',
  'packDigest',
  'signer',
] as const;

function invalid(file: string, message: string): StoreError {
  return new StoreError('ERR_LOCKFILE_INVALID', `${file}: ${message}`, { subject: file });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Parses and checks a lockfile document: strict JSON, version 1, bounded, every field typed. */
export function parseLockfile(text: string, file = 'lockfile'): Lockfile {
  let document: unknown;
  try {
    document = parseStrictJson(text, { maxBytes: LOCKFILE_LIMITS.maxBytes, what: file });
  } catch (cause) {
    throw new StoreError('ERR_LOCKFILE_INVALID', (cause as Error).message, {
      cause,
      subject: file,
    });
  }
  if (!isRecord(document)) throw invalid(file, 'is not a JSON object');
  if (document.lockfileVersion !== LOCKFILE_VERSION)
    throw invalid(file, `lockfileVersion must be ${LOCKFILE_VERSION}`);
  for (const key of Object.keys(document))
    if (key !== 'lockfileVersion' && key !== 'packs') throw invalid(file, `unknown field "${key}"`);
  if (!isRecord(document.packs)) throw invalid(file, '"packs" must be an object');
  const keys = Object.keys(document.packs);
  if (keys.length > LOCKFILE_LIMITS.maxEntries)
    throw invalid(file, `more than ${LOCKFILE_LIMITS.maxEntries} entries`);
  const packs: Record<string, LockEntry> = {};
  for (const key of keys) {
    if (!KEY.test(key)) throw invalid(file, `entry "${key}" is not type/slug`);
    const raw = document.packs[key];
    if (!isRecord(raw)) throw invalid(file, `entry ${key} is not an object`);
    for (const field of Object.keys(raw))
      if (!(ENTRY_FIELDS as readonly string[]).includes(field))
        throw invalid(file, `entry ${key} has an unknown field "${field}"`);
    for (const field of ['version', 'source', 'resolved'] as const) {
      const value = raw[field];
      if (typeof value !== 'string' || value === '' || value.length > 2048)
        throw invalid(file, `entry ${key}: ${field} must be a non-empty string`);
    }
    for (const field of ['archiveSha256', 'packDigest'] as const) {
      if (typeof raw[field] !== 'string' || !HEX64.test(raw[field]))
        throw invalid(file, `entry ${key}: ${field} must be 64 lowercase hex`);
    }
    if (raw.signer !== null && (typeof raw.signer !== 'string' || raw.signer.length > 256))
      throw invalid(file, `entry ${key}: signer must be a key id or null`);
    // An OCI entry's manifest lives in its own repository (what an install records): a `resolved`
    // in another repository would install another artifact under this entry's name.
    const source = raw.source as string;
    const resolved = raw.resolved as string;
    const pinned = `${source}@sha256:`;
    if (
      (source.startsWith('oci://') || resolved.startsWith('oci://')) &&
      !(
        source.startsWith('oci://') &&
        resolved.startsWith(pinned) &&
        HEX64.test(resolved.slice(pinned.length))
      )
    )
      throw invalid(
        file,
        `entry ${key}: an OCI entry's resolved must be its source followed by @sha256:<64 hex>`,
      );
    packs[key] = normalizeEntry(raw as unknown as LockEntry);
  }
  return { lockfileVersion: 1, packs };
}

function normalizeEntry(entry: LockEntry): LockEntry {
  // Fixed field order: the file diffs cleanly whatever order the entry was built in.
  return {
    version: entry.version,
    source: entry.source,
    resolved: entry.resolved,
    archiveSha256: entry.archiveSha256,
    packDigest: entry.packDigest,
    signer: entry.signer,
  };
}

/** The lockfile's text: `lockfileVersion`, then entries sorted by key, fields in a fixed order. */
export function formatLockfile(lock: Lockfile): string {
  const packs: Record<string, LockEntry> = {};
  for (const key of Object.keys(lock.packs).sort()) packs[key] = normalizeEntry(lock.packs[key]!);
  return `${JSON.stringify({ lockfileVersion: LOCKFILE_VERSION, packs }, null, 2)}\n`;
}

/**
 * Reads a lockfile, bounded before reading. An absent file is `undefined` (the caller decides:
 * recording starts an empty lock, a frozen install refuses).
 */
export async function readLockfile(file: string): Promise<Lockfile | undefined> {
  const max = LOCKFILE_LIMITS.maxBytes;
  // A lockfile is the user's own file, named by them: a symlink to it is followed.
  const read = readBoundedFile(file, max, { followSymlinks: true });
  switch (read.kind) {
    case 'absent':
      return undefined;
    case 'symlink':
    case 'failed':
      throw new StoreError(
        'ERR_LOCKFILE_IO',
        `cannot read ${file}: ${(read.cause as Error).message}`,
        { cause: read.cause, subject: file },
      );
    case 'not-regular-file':
      throw invalid(file, 'is not a file');
    case 'too-large':
      throw invalid(file, `is larger than ${max} bytes`);
    case 'grew':
      throw invalid(file, `grew while it was being read (the limit is ${max} bytes)`);
    case 'read':
      return parseLockfile(read.bytes.toString('utf8'), file);
  }
}

/**
 * Writes the lockfile atomically (`writeFileAtomic`): a temporary file in the same folder,
 * fsynced, renamed over the old one, then the folder fsynced, so a crash leaves the old lock or
 * the new one.
 */
export async function writeLockfile(file: string, lock: Lockfile): Promise<void> {
  try {
    await writeFileAtomic(file, formatLockfile(lock), { mode: 0o644, syncFolder: true });
  } catch (cause) {
    throw new StoreError('ERR_LOCKFILE_IO', `cannot write ${file}: ${(cause as Error).message}`, {
      cause,
      subject: file,
    });
  }
}

/**
 * What a source offers now for a lock entry: its bytes and digests, and, where the artifact names
 * itself (an OCI manifest's annotations), the pack and version it is.
 */
export type LockObservation = Partial<
  Pick<LockEntry, 'resolved' | 'archiveSha256' | 'packDigest' | 'version'>
> & { name?: string };

/**
 * A frozen install's check, before anything is installed: what the source offers now must be
 * what the lock recorded. Throws `ERR_LOCK_MISMATCH` naming the entry, the field, and the old
 * and new values.
 */
export function assertLockEntryMatches(key: string, locked: LockEntry, now: LockObservation): void {
  const slug = key.slice(key.indexOf('/') + 1);
  if (now.name !== undefined && now.name !== slug) {
    throw new StoreError(
      'ERR_LOCK_MISMATCH',
      `${key}@${locked.version}: the artifact it resolves to is ${now.name}, not ${slug}; nothing was installed`,
      { subject: key },
    );
  }
  if (now.version !== undefined && now.version !== locked.version) {
    throw new StoreError(
      'ERR_LOCK_MISMATCH',
      `${key}@${locked.version}: the artifact it resolves to is version ${now.version}; nothing was installed`,
      { subject: key },
    );
  }
  for (const field of ['resolved', 'archiveSha256', 'packDigest'] as const) {
    const value = now[field];
    if (value !== undefined && value !== locked[field]) {
      throw new StoreError(
        'ERR_LOCK_MISMATCH',
        `${key}@${locked.version}: ${field} is now ${value}, the lock records ${locked[field]} (a moved tag or a re-published version); nothing was installed`,
        { subject: key },
      );
    }
  }
}
