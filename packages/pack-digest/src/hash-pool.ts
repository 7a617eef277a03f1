import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import { Worker } from 'node:worker_threads';
import { hashRegularFileSync, type HashedFile } from './hash-file.js';

/**
 * Read buffer per hashing thread: large enough that system calls do not dominate, small enough
 * to stay in a core's L2 cache. Measured on Node 20 (issue 14): 64–128 KiB reads spent a third
 * of the system time of 1 MiB reads, and 256 KiB or more was as slow as 1 MiB.
 */
export const HASH_BUFFER_BYTES = 128 * 1024;

// A worker gets every path once, then claims batches itself from the cursor it shares with the
// other threads (Atomics.add), so it never waits for the calling thread to hand it work and
// never holds work another thread could take.
const WORKER_SOURCE = `'use strict';
const fs = require('node:fs');
const crypto = require('node:crypto');
const { parentPort } = require('node:worker_threads');
const hashRegularFileSync = ${hashRegularFileSync.toString()};
const buffer = Buffer.allocUnsafe(${HASH_BUFFER_BYTES});
parentPort.once('message', ({ paths, cursor, batchSize }) => {
  for (;;) {
    const start = Atomics.add(cursor, 0, batchSize);
    if (start >= paths.length) break;
    const end = Math.min(paths.length, start + batchSize);
    const results = [];
    for (let i = start; i < end; i++) results.push(hashRegularFileSync(fs, crypto, paths[i], buffer));
    parentPort.postMessage({ id: start, results });
  }
  parentPort.postMessage({ done: true });
});
`;

type WorkerReply = { id: number; results: HashedFile[]; done?: undefined } | { done: true };

/**
 * Hashes a list of files on `threads` threads: the calling thread and `threads - 1` workers.
 * Every thread claims small batches from one shared cursor, so a few large files spread over
 * every thread and thousands of small ones do not pay one message each. The calling thread
 * hashes from the first microsecond, so the ~20–40 ms that a cold worker needs to start is not
 * idle time (issue 14). Results come back in input order.
 */
export async function hashFilesInWorkers(
  paths: readonly string[],
  threads: number,
  signal?: AbortSignal,
): Promise<HashedFile[]> {
  const results: HashedFile[] = new Array(paths.length);
  const batchSize = Math.max(1, Math.min(64, Math.ceil(paths.length / (threads * 8))));
  const cursor = new Int32Array(new SharedArrayBuffer(4));
  const workers: Worker[] = [];
  // No thread claims past the end; on abort the cursor jumps there so every thread stops.
  const stopAll = () => Atomics.store(cursor, 0, paths.length);

  const runWorker = (worker: Worker) =>
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
      worker.postMessage({ paths, cursor, batchSize });
    });

  const runCallingThread = async () => {
    const buffer = Buffer.allocUnsafe(HASH_BUFFER_BYTES);
    for (;;) {
      // Let worker replies and an abort in between batches.
      await new Promise((resolve) => setImmediate(resolve));
      if (signal?.aborted) throw signal.reason;
      const start = Atomics.add(cursor, 0, batchSize);
      if (start >= paths.length) return;
      const end = Math.min(paths.length, start + batchSize);
      for (let i = start; i < end; i++) {
        results[i] = hashRegularFileSync(fs, crypto, paths[i]!, buffer);
      }
    }
  };

  const onAbort = () => {
    stopAll();
    for (const worker of workers) void worker.terminate();
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for (let i = 1; i < threads; i++) {
      workers.push(
        new Worker(WORKER_SOURCE, {
          eval: true,
          resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 },
        }),
      );
    }
    await Promise.all([runCallingThread(), ...workers.map(runWorker)]);
    if (signal?.aborted) throw signal.reason;
    return results;
  } catch (error) {
    stopAll();
    throw error;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}
