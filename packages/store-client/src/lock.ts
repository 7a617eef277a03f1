import { randomBytes } from 'node:crypto';
import { link, open, rename, rm, stat, utimes } from 'node:fs/promises';
import { hostname } from 'node:os';
import { abortError, StoreError } from './errors.js';
import { readSmallFile } from './small-file.js';

/** A lock holds `{ pid, host, … }`: far less than this. */
const LOCK_FILE_MAX_BYTES = 4096;

export interface LockOptions {
  timeoutMs: number;
  /** A lock from another host is considered stale after this long. */
  staleMs: number;
  signal?: AbortSignal;
}

interface LockInfo {
  pid: number;
  host: string;
  /** Random per acquisition (absent in locks of earlier releases): which holder this is. */
  id?: string;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readLock(path: string): Promise<LockInfo | undefined> {
  try {
    // A lock is a few dozen bytes: anything else (a symlink, a FIFO, a large file planted in the
    // state folder) is not a lock this code wrote, and is judged by its age.
    const read = readSmallFile(path, LOCK_FILE_MAX_BYTES);
    if (!read.ok) return undefined;
    const parsed = JSON.parse(read.bytes.toString('utf8')) as Partial<LockInfo>;
    if (typeof parsed.pid === 'number' && typeof parsed.host === 'string')
      return parsed as LockInfo;
  } catch {
    // unreadable or half-written: judged by age below
  }
  return undefined;
}

async function isStale(path: string, staleMs: number): Promise<boolean> {
  const info = await readLock(path);
  if (info && info.host === hostname()) return !isAlive(info.pid);
  try {
    return Date.now() - (await stat(path)).mtimeMs > (info ? staleMs : 10_000);
  } catch {
    return false;
  }
}

/**
 * An exclusive lock file (O_EXCL) holding `{pid, host, id}`. A lock whose process is dead is
 * broken by renaming it aside first, so two processes breaking the same stale lock cannot both
 * win. Another host cannot see whether the holder lives, only the lock's age: so while it is
 * held, its modification time is renewed every `staleMs / 4`, and a holder that runs longer
 * than `staleMs` (a slow download) is never taken for a dead one. Releasing removes the lock only
 * while it is still this holder's (its `id`): one broken and taken by another install meanwhile
 * is that install's, and stays.
 */
export async function acquireLock(
  path: string,
  options: LockOptions,
): Promise<() => Promise<void>> {
  const deadline = Date.now() + options.timeoutMs;
  const id = randomBytes(12).toString('hex');
  const content = JSON.stringify({
    pid: process.pid,
    host: hostname(),
    id,
    at: new Date().toISOString(),
  });
  for (;;) {
    if (options.signal?.aborted) throw abortError(options.signal);
    try {
      const handle = await open(path, 'wx', 0o644);
      try {
        await handle.writeFile(content);
      } finally {
        await handle.close();
      }
      const heartbeat = setInterval(
        () => {
          const now = new Date();
          void utimes(path, now, now).catch(() => undefined);
        },
        Math.max(1, Math.floor(options.staleMs / 4)),
      );
      heartbeat.unref();
      return async () => {
        clearInterval(heartbeat);
        if ((await readLock(path))?.id === id) await rm(path, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new StoreError(
          'ERR_INSTALL_IO',
          `cannot create the lock ${path}: ${(error as Error).message}`,
          { cause: error },
        );
      }
    }
    if (await isStale(path, options.staleMs)) {
      const aside = `${path}.stale-${randomBytes(6).toString('hex')}`;
      try {
        await rename(path, aside);
        // If what we moved is not stale after all (someone re-took the lock in between), put it back.
        if (!(await isStale(aside, options.staleMs)))
          await link(aside, path).catch(() => undefined);
        await rm(aside, { force: true });
      } catch {
        // someone else broke it first
      }
      continue;
    }
    if (Date.now() > deadline) {
      const info = await readLock(path);
      throw new StoreError(
        'ERR_INSTALL_LOCKED',
        `another install holds ${path}${info ? ` (pid ${info.pid} on ${info.host})` : ''}; waited ${options.timeoutMs} ms`,
        { subject: path },
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
