import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import { Worker } from 'node:worker_threads';
import { hashRegularFileSync, type HashedFile } from './hash-file.js';

/** Read buffer per hashing thread: large enough that syscalls do not dominate, small enough to bound memory. */
export const HASH_BUFFER_BYTES = 1024 * 1024;

const WORKER_SOURCE = `'use strict';
const fs = require('node:fs');
const crypto = require('node:crypto');
const { parentPort } = require('node:worker_threads');
const hashRegularFileSync = ${hashRegularFileSync.toString()};
const buffer = Buffer.allocUnsafe(${HASH_BUFFER_BYTES});
parentPort.on('message', (batch) => {
  const results = [];
  for (const path of batch.paths) results.push(hashRegularFileSync(fs, crypto, path, buffer));
  parentPort.postMessage({ id: batch.id, results });
});
`;

interface BatchReply {
  id: number;
  results: HashedFile[];
}

/**
 * Hashes a list of files on `threads` threads: the calling thread and `threads - 1` workers.
 * Work is handed out in small batches from a shared cursor so that a few large files spread over
 * every thread and thousands of small ones do not pay one message each. The calling thread hashes
 * from the first microsecond, so the ~20–40 ms that a cold worker needs to start, compile and
 * open its first file is not idle time (issue 14: the CLI used to wait ~300 ms for two cold
 * workers). Each worker keeps one batch queued behind the one it hashes, so it never waits for
 * the calling thread to come back to its event loop. Results come back in input order.
 */
export async function hashFilesInWorkers(
  paths: readonly string[],
  threads: number,
  signal?: AbortSignal,
): Promise<HashedFile[]> {
  const results: HashedFile[] = new Array(paths.length);
  const batchSize = Math.max(1, Math.min(64, Math.ceil(paths.length / (threads * 4))));
  let cursor = 0;
  const workers: Worker[] = [];
  const take = (): [number, number] | undefined => {
    if (cursor >= paths.length) return undefined;
    const start = cursor;
    cursor = Math.min(paths.length, cursor + batchSize);
    return [start, cursor];
  };

  const runWorker = (worker: Worker) =>
    new Promise<void>((resolve, reject) => {
      let inFlight = 0;
      const next = () => {
        if (signal?.aborted) return reject(signal.reason);
        while (inFlight < 2) {
          const batch = take();
          if (batch === undefined) break;
          inFlight++;
          worker.postMessage({ id: batch[0], paths: paths.slice(batch[0], batch[1]) });
        }
        if (inFlight === 0) resolve();
      };
      worker.on('message', (reply: BatchReply) => {
        inFlight--;
        for (let i = 0; i < reply.results.length; i++) results[reply.id + i] = reply.results[i]!;
        next();
      });
      worker.once('error', reject);
      worker.once('exit', (code) => {
        if (inFlight > 0 || code !== 0) reject(new Error(`hashing thread exited with code ${code}`));
      });
      next();
    });

  const runCallingThread = async () => {
    const buffer = Buffer.allocUnsafe(HASH_BUFFER_BYTES);
    for (;;) {
      // Let worker replies in (they hand out the next batches) before taking one more.
      await new Promise((resolve) => setImmediate(resolve));
      if (signal?.aborted) throw signal.reason;
      const batch = take();
      if (batch === undefined) return;
      for (let i = batch[0]; i < batch[1]; i++) {
        results[i] = hashRegularFileSync(fs, crypto, paths[i]!, buffer);
      }
    }
  };

  const onAbort = () => {
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
    return results;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}
