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
 * Hashes a list of files on `threads` worker threads. Work is handed out in small batches from a
 * shared cursor so that a few large files spread over every thread and thousands of small ones
 * do not pay one message each. Results come back in input order.
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

  const runWorker = (worker: Worker) =>
    new Promise<void>((resolve, reject) => {
      const next = () => {
        if (signal?.aborted) return reject(signal.reason);
        if (cursor >= paths.length) return resolve();
        const start = cursor;
        cursor = Math.min(paths.length, cursor + batchSize);
        worker.postMessage({ id: start, paths: paths.slice(start, cursor) });
      };
      worker.on('message', (reply: BatchReply) => {
        for (let i = 0; i < reply.results.length; i++) results[reply.id + i] = reply.results[i]!;
        next();
      });
      worker.once('error', reject);
      worker.once('exit', (code) => {
        if (cursor < paths.length || code !== 0)
          reject(new Error(`hashing thread exited with code ${code}`));
      });
      next();
    });

  const onAbort = () => {
    for (const worker of workers) void worker.terminate();
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for (let i = 0; i < threads; i++) {
      workers.push(
        new Worker(WORKER_SOURCE, {
          eval: true,
          resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 },
        }),
      );
    }
    await Promise.all(workers.map(runWorker));
    return results;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}
