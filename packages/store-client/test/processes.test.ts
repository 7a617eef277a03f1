import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { buildStaticStore, installPack, openStore } from '../src/index.js';
import { serveDir, tempDir, writePack } from './helpers.js';

const CHILD = fileURLToPath(new URL('./fixtures/install-child.mjs', import.meta.url));

interface ChildEvent {
  phase: string;
  bytes?: number;
  at: number;
  code?: string;
}

function runChild(args: string[], onEvent?: (event: ChildEvent, child: ChildProcess) => void) {
  const child = spawn(process.execPath, [CHILD, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const events: ChildEvent[] = [];
  let buffer = '';
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout!.on('data', (d: Buffer) => {
    buffer += d.toString();
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const event = JSON.parse(buffer.slice(0, nl)) as ChildEvent;
      buffer = buffer.slice(nl + 1);
      events.push(event);
      onEvent?.(event, child);
    }
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    child.on('exit', (code, signal) => res({ code, signal })),
  );
  return { child, events, exited, stderr: () => stderr };
}

/** A pack whose archive is big and incompressible (random bytes), so extraction takes a while. */
async function slowStore(versions: Record<string, number>) {
  const root = await tempDir();
  for (const [version, megabytes] of Object.entries(versions)) {
    const files: Record<string, string> = {};
    for (let i = 0; i < megabytes; i++)
      files[`data/blob-${i}.bin`] = randomBytes(1024 * 1024).toString('latin1');
    await writePack(join(root, 'packs', version), 'big', version, files);
  }
  const out = join(root, 'store');
  await buildStaticStore(join(root, 'packs'), { out });
  const server = await serveDir(out, {
    slow: { chunk: 64 * 1024, delayMs: 15, paths: /\.tar\.gz$/ },
  });
  return { root, url: `${server.url}/index.json`, home: join(root, 'home') };
}

describe('installer processes', () => {
  it('SIGKILL mid-extraction leaves the previous version intact; the next run removes the staging folder', async () => {
    const { url, home } = await slowStore({ '1.0.0': 1, '2.0.0': 12 });
    const store = await openStore({ url, env: {}, cacheDir: false });
    await installPack(store, { type: 'pack', slug: 'big', version: '1.0.0' }, { home });
    const packDir = join(home, 'agents', 'big');
    const previous = await readFile(join(packDir, '1.0.0', 'AGENTS.md'), 'utf8');

    let killedAt = 0;
    const run = runChild([url, home, 'big', '2.0.0'], (event, child) => {
      // Kill once a few MiB have been written into the staging folder.
      if (event.phase === 'extract' && (event.bytes ?? 0) >= 2 * 1024 * 1024 && !killedAt) {
        killedAt = Date.now();
        child.kill('SIGKILL');
      }
    });
    const { signal } = await run.exited;
    expect(signal, run.stderr()).toBe('SIGKILL');
    expect(run.events.some((e) => e.phase === 'done')).toBe(false);

    const left = await readdir(packDir);
    expect(left.filter((n) => n.startsWith('.staging-'))).toHaveLength(1); // killed mid-extraction
    expect(left).toContain('.lock'); // held by a dead process
    expect(left).not.toContain('2.0.0');
    expect(await readFile(join(packDir, 'current.txt'), 'utf8')).toBe('1.0.0\n');
    expect(await readFile(join(packDir, '1.0.0', 'AGENTS.md'), 'utf8')).toBe(previous);

    // The next run breaks the stale lock, removes the staging folder and installs.
    const fast = await openStore({ url, env: {}, cacheDir: false });
    const result = await installPack(
      fast,
      { type: 'pack', slug: 'big', version: '2.0.0' },
      { home },
    );
    expect(result.version).toBe('2.0.0');
    expect((await readdir(packDir)).sort()).toEqual(['1.0.0', '2.0.0', 'current.txt']);
    expect(await readFile(join(packDir, 'current.txt'), 'utf8')).toBe('2.0.0\n');
  }, 30_000);

  it('two concurrent installs of the same pack are serialised by the lock', async () => {
    const { url, home } = await slowStore({ '1.0.0': 3 });
    const a = runChild([url, home, 'big', '1.0.0', 'force']);
    const b = runChild([url, home, 'big', '1.0.0', 'force']);
    const [ea, eb] = await Promise.all([a.exited, b.exited]);
    expect(ea.code, a.stderr() + JSON.stringify(a.events.at(-1))).toBe(0);
    expect(eb.code, b.stderr() + JSON.stringify(b.events.at(-1))).toBe(0);
    // Everything an installer does after taking the lock (download, extract, install) happens
    // inside its interval; the two intervals must not overlap.
    const span = (events: ChildEvent[]) => [events[0]!.at, events.at(-1)!.at] as const;
    const [a0, a1] = span(a.events);
    const [b0, b1] = span(b.events);
    expect(a1 <= b0 || b1 <= a0, `a ${a0}-${a1}, b ${b0}-${b1}`).toBe(true);
    expect(a.events.at(-1)!.phase).toBe('done');
    expect(b.events.at(-1)!.phase).toBe('done');
    const packDir = join(home, 'agents', 'big');
    expect((await readdir(packDir)).sort()).toEqual(['1.0.0', 'current.txt']);
  }, 30_000);
});
