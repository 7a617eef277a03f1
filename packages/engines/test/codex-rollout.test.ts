/**
 * codex's session rollout lives in a state folder that a confined command of another session may
 * be able to write. Between the `readdir` that finds the rollout and the open that reads it, the
 * file can be swapped: a symlink to a host file must not be read (its JSON would become tool
 * frames), a FIFO must not hang the turn, a hard link to a host file must not be read either.
 */
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  constants,
  linkSync,
  mkdirSync,
  openSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readRolloutTail, refusedCalls, ROLLOUT_LIMITS } from '../src/codex-rollout.js';
import {
  cleanTemps,
  CODEX_ROLLOUT as ROLLOUT,
  CODEX_THREAD as THREAD,
  codexRolloutFolder as rolloutFolder,
  tempDir,
} from './helpers.js';

/** The host file a swapped-in link points at: a rollout naming a call that never happened. */
const HOST_FILE = ROLLOUT.replaceAll('call-1', 'host-secret');

const unblockers: (() => void)[] = [];
afterEach(() => {
  unblockers.splice(0).forEach((unblock) => unblock());
  cleanTemps();
});

/**
 * A reader blocked in `open` on a FIFO holds one of libuv's threads until a writer comes: open
 * the write end (without waiting) so a regression cannot wedge the rest of the run.
 */
function releaseFifo(path: string): void {
  unblockers.push(() => {
    try {
      closeSync(openSync(path, constants.O_WRONLY | constants.O_NONBLOCK));
    } catch {
      // No reader waiting on it (ENXIO): nothing to release.
    }
  });
}

function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) =>
      setTimeout(() => reject(new Error(`still waiting after ${ms} ms`)), ms),
    ),
  ]);
}

function hostFile(): string {
  const path = join(tempDir(), 'host.jsonl');
  writeFileSync(path, HOST_FILE);
  return path;
}

describe('readRolloutTail', () => {
  it('reads a regular rollout, and only its last maxBytes (the cut first line dropped)', async () => {
    const { file } = rolloutFolder();
    writeFileSync(file, `${ROLLOUT}\n`);
    expect(await readRolloutTail(file, ROLLOUT_LIMITS.maxBytes)).toBe(`${ROLLOUT}\n`);
    const lastLine = ROLLOUT.slice(ROLLOUT.lastIndexOf('\n') + 1);
    expect(await readRolloutTail(file, lastLine.length + 10)).toBe(`${lastLine}\n`);
  });

  it('a symlink to a file outside is not followed', async () => {
    const { file } = rolloutFolder();
    symlinkSync(hostFile(), file);
    expect(await readRolloutTail(file, ROLLOUT_LIMITS.maxBytes)).toBeUndefined();
  });

  it('a hard link to a file outside is not read', async () => {
    const { file } = rolloutFolder();
    linkSync(hostFile(), file);
    expect(await readRolloutTail(file, ROLLOUT_LIMITS.maxBytes)).toBeUndefined();
  });

  it('a FIFO is refused at once, not waited on', async () => {
    const { file } = rolloutFolder();
    execFileSync('mkfifo', [file]);
    releaseFifo(file);
    expect(await within(3_000, readRolloutTail(file, ROLLOUT_LIMITS.maxBytes))).toBeUndefined();
  });
});

describe('refusedCalls', () => {
  it("reads the refused calls of the thread's last turn from a regular rollout", async () => {
    const { home, file } = rolloutFolder();
    writeFileSync(file, `${ROLLOUT}\n`);
    expect(await refusedCalls(home, THREAD)).toEqual([
      {
        callId: 'call-1',
        name: 'shell',
        input: { command: ['cat', '/etc/shadow'] },
        output: 'refused',
      },
    ]);
  });

  it('a symlink, a hard link or a FIFO in its place gives no calls, promptly', async () => {
    for (const plant of [
      (file: string) => symlinkSync(hostFile(), file),
      (file: string) => linkSync(hostFile(), file),
      (file: string) => {
        execFileSync('mkfifo', [file]);
        releaseFifo(file);
      },
    ]) {
      const { home, file } = rolloutFolder();
      plant(file);
      expect(await within(3_000, refusedCalls(home, THREAD))).toBeUndefined();
    }
  });

  describe('links on the way to the rollout are never followed', () => {
    /** A host folder holding a complete codex home whose rollout names a call that never happened. */
    function outsideHome(): string {
      const outside = tempDir();
      const day = join(outside, 'sessions', '2026', '12', '02');
      mkdirSync(day, { recursive: true });
      writeFileSync(join(day, `rollout-2026-12-02T07-00-00-${THREAD}.jsonl`), HOST_FILE);
      return outside;
    }

    it('codex home itself replaced by a link to a host folder', async () => {
      const home = join(tempDir(), 'codex');
      symlinkSync(outsideHome(), home);
      expect(await refusedCalls(home, THREAD)).toBeUndefined();
    });

    it('sessions replaced by a link to a host folder', async () => {
      const home = tempDir();
      symlinkSync(join(outsideHome(), 'sessions'), join(home, 'sessions'));
      expect(await refusedCalls(home, THREAD)).toBeUndefined();
    });

    it('a folder below sessions replaced by a link after the walk (the open must not pass it)', async () => {
      const home = tempDir();
      mkdirSync(join(home, 'sessions'));
      // What findRollout found, with `2026` swapped for a link since.
      symlinkSync(join(outsideHome(), 'sessions', '2026'), join(home, 'sessions', '2026'));
      const path = join(
        home,
        'sessions',
        '2026',
        '12',
        '02',
        `rollout-2026-12-02T07-00-00-${THREAD}.jsonl`,
      );
      expect(await readRolloutTail(path, ROLLOUT_LIMITS.maxBytes)).toBeUndefined();
      expect(await refusedCalls(home, THREAD)).toBeUndefined();
    });

    it('the same tree as real folders is read (the control)', async () => {
      const home = outsideHome();
      expect((await refusedCalls(home, THREAD))?.map((call) => call.callId)).toEqual([
        'host-secret',
      ]);
    });
  });
});
