// The install lock (`<home>/agents/<slug>/.lock`) as two installs sharing a home see it: one on
// another host, which can judge the lock only by its age, and one that broke a lock and took it.
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireLock } from '../src/lock.js';
import { tempDir } from './helpers.js';

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error as { code?: string; message: string },
  );

describe('the install lock', () => {
  it('held longer than staleMs by an install on another host, it stays fresh and is not broken', async () => {
    const path = join(await tempDir(), '.lock');
    const release = await acquireLock(path, { timeoutMs: 1000, staleMs: 1000 });
    // The holder as another host sees it: same lock, another host name (its pid means nothing here).
    const held = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
    await writeFile(path, JSON.stringify({ ...held, host: `not-${hostname()}` }));
    const second = await failure(acquireLock(path, { timeoutMs: 2500, staleMs: 1000 }));
    expect(second?.code).toBe('ERR_INSTALL_LOCKED');
    expect(Date.now() - (await stat(path)).mtimeMs).toBeLessThan(1000);
    await release();
    await expect(stat(path)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('releasing leaves a lock that another install has taken since (broken as stale) alone', async () => {
    const path = join(await tempDir(), '.lock');
    const release = await acquireLock(path, { timeoutMs: 1000, staleMs: 60_000 });
    const theirs = JSON.stringify({ pid: process.pid, host: hostname(), id: 'theirs' });
    await rm(path);
    await writeFile(path, theirs);
    await release();
    expect(await readFile(path, 'utf8')).toBe(theirs);
  });
});
