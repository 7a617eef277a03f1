import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import type { Worker } from 'node:worker_threads';
import { hashRegularFileSync, type ByteBudget, type HashedFile } from './hash-file.js';

/**
 * Read buffer per hashing thread: large enough that system calls do not dominate, small enough
 * to stay in a core's L2 cache. Measured on Node 20 (issue 14): 64–128 KiB reads spent a third
 * of the system time of 1 MiB reads, and 256 KiB or more was as slow as 1 MiB.
 */
export const HASH_BUFFER_BYTES = 128 * 1024;

// The cursor's value once the pool stops: past any list, so every claim fails from then on.
const STOPPED = 0x7fffffff;

/**
 * Claims the next batch of the first `listed` paths from the cursor every thread shares:
 * `[start, end)`, or `undefined` when all of them are claimed. A compare-and-swap, not an add,
 * so that no thread claims past what it has been given while the list is still growing.
 * Batches are small (a few per thread), so a few large files spread over every thread and
 * thousands of small ones do not pay one message each.
 *
 * It runs both here and, through its source text, in the workers: it may reference nothing
 * but its parameters and globals.
 */
function claimBatch(
  cursor: Int32Array,
  listed: number,
  threads: number,
): [start: number, end: number] | undefined {
  const size = Math.max(1, Math.min(64, Math.ceil(listed / (threads * 8))));
  for (;;) {
    const start = Atomics.load(cursor, 0);
    if (start >= listed) return undefined;
    const end = Math.min(listed, start + size);
    if (Atomics.compareExchange(cursor, 0, start, end) === start) return [start, end];
  }
}

// A worker receives the list in one or more messages, in order (the last one says so), and after
// each claims batches itself until the cursor passes what it has: it never waits for the calling
// thread to hand it work and never holds work another thread could take. The message handler
// must stay the script's one anonymous function (apps/cli/test/digest-threads.test.ts counts
// its runs).
const WORKER_SOURCE = `'use strict';
const fs = require('node:fs');
const crypto = require('node:crypto');
const { parentPort, workerData } = require('node:worker_threads');
const hashRegularFileSync = ${hashRegularFileSync.toString()};
const claimBatch = ${claimBatch.toString()};
const buffer = Buffer.allocUnsafe(${HASH_BUFFER_BYTES});
const { cursor, threads, budget } = workerData;
const paths = [];
parentPort.on('message', ({ more, last }) => {
  for (const path of more) paths.push(path);
  for (let claimed; (claimed = claimBatch(cursor, paths.length, threads)) !== undefined; ) {
    const [start, end] = claimed;
    const results = [];
    for (let i = start; i < end; i++) results.push(hashRegularFileSync(fs, crypto, paths[i], buffer, undefined, budget));
    parentPort.postMessage({ id: start, results });
  }
  if (last) parentPort.postMessage({ done: true });
});
`;

type WorkerReply = { id: number; results: HashedFile[]; done?: undefined } | { done: true };

export interface HashingPool {
  /** Appends paths to the list; the workers start on them at once. */
  add(paths: readonly string[]): void;
  /**
   * Appends the last paths, hashes on the calling thread too until every path is claimed, and
   * returns every result in list order. Stops the workers, whatever the outcome.
   */
  finish(paths: readonly string[]): Promise<HashedFile[]>;
  /** Stops the workers (idempotent): for a caller that will not call `finish`. */
  close(): Promise<void>;
}

/**
 * Starts `threads - 1` worker threads (the calling thread is the last one, from `finish`) to
 * hash a list of files that may still be growing: a cold worker needs ~30–40 ms before it claims
 * work, so a caller that starts the pool while it is still listing files finds the workers
 * booted, and already hashing, when the list is complete (issue 14).
 */
export function startHashingPool(
  threads: number,
  budget: ByteBudget,
  signal?: AbortSignal,
): HashingPool {
  const paths: string[] = [];
  // Grown with the list (never written past its end), so that it stays a dense array.
  const results: Array<HashedFile | undefined> = [];
  const cursor = new Int32Array(new SharedArrayBuffer(4));
  const stopAll = () => Atomics.store(cursor, 0, STOPPED);
  const workers: Worker[] = [];
  const onAbort = () => {
    stopAll();
    for (const worker of workers) void worker.terminate();
  };
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      stopAll();
      signal?.removeEventListener('abort', onAbort);
      await Promise.all(workers.map((worker) => worker.terminate()));
    })();
    return closed;
  };

  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    // Loaded when a pool starts, not with this module: most packs never start one, and loading
    // node:worker_threads was ~1 ms of every CLI start-up (issue 14, bench/README.md).
    const { Worker } = process.getBuiltinModule('node:worker_threads');
    for (let i = 1; i < threads; i++) {
      workers.push(
        new Worker(WORKER_SOURCE, {
          eval: true,
          workerData: { cursor, threads, budget },
          resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 },
        }),
      );
    }
  } catch (error) {
    void close();
    throw error;
  }
  const workersDone = workers.map(
    (worker) =>
      new Promise<void>((resolve, reject) => {
        let done = false;
        worker.on('message', (reply: WorkerReply) => {
          if (reply.done) {
            done = true;
            return resolve();
          }
          for (let i = 0; i < reply.results.length; i++) results[reply.id + i] = reply.results[i]!;
        });
        worker.once('error', reject);
        worker.once('exit', (code) => {
          if (!done) reject(new Error(`hashing thread exited with code ${code}`));
        });
      }),
  );
  // A worker that fails while the list is still growing is reported by finish(); one whose
  // caller gave up first (close()) is reported by no one.
  for (const done of workersDone) done.catch(() => undefined);

  const post = (more: readonly string[], last: boolean) => {
    for (const path of more) {
      paths.push(path);
      results.push(undefined);
    }
    for (const worker of workers) worker.postMessage({ more, last });
  };

  const runCallingThread = async () => {
    const buffer = Buffer.allocUnsafe(HASH_BUFFER_BYTES);
    for (;;) {
      // Let worker replies and an abort in between batches.
      await new Promise((resolve) => setImmediate(resolve));
      if (signal?.aborted) throw signal.reason;
      const claimed = claimBatch(cursor, paths.length, threads);
      if (claimed === undefined) return;
      for (let i = claimed[0]; i < claimed[1]; i++) {
        results[i] = hashRegularFileSync(fs, crypto, paths[i]!, buffer, undefined, budget);
      }
    }
  };

  const hashMissing = async () => {
    const buffer = Buffer.allocUnsafe(HASH_BUFFER_BYTES);
    for (let i = 0; i < paths.length; i++) {
      if (results[i] !== undefined) continue;
      if (i % 64 === 0) {
        await new Promise((resolve) => setImmediate(resolve));
        if (signal?.aborted) throw signal.reason;
      }
      // Counted against the budget again: the dead thread may or may not have counted it, and
      // counting twice can only refuse a pack at the very edge of the bound, never read past it.
      results[i] = hashRegularFileSync(fs, crypto, paths[i]!, buffer, undefined, budget);
    }
  };

  return {
    add: (more) => post(more, false),
    async finish(more) {
      try {
        post(more, true);
        const [calling, ...threads] = await Promise.allSettled([
          runCallingThread(),
          ...workersDone,
        ]);
        if (calling!.status === 'rejected') throw calling!.reason;
        if (signal?.aborted) throw signal.reason;
        // Every path was claimed by one thread, and each live thread reports all it claimed. A
        // thread that died (each holds the whole list in a 64 MiB heap: 20,000 paths of 4 KiB,
        // within the digest's bounds, ran it out of memory) reports none of the batch it held:
        // those files are hashed here, so that the outcome never depends on the threads.
        if (threads.some((thread) => thread.status === 'rejected')) await hashMissing();
        return results as HashedFile[];
      } finally {
        await close();
      }
    },
    close,
  };
}

/**
 * Hashes a list of files on `threads` threads: the calling thread, which hashes from the first
 * microsecond, and `threads - 1` workers. Results come back in input order.
 */
export async function hashFilesInWorkers(
  paths: readonly string[],
  threads: number,
  budget: ByteBudget,
  signal?: AbortSignal,
): Promise<HashedFile[]> {
  return startHashingPool(threads, budget, signal).finish(paths);
}
