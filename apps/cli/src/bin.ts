#!/usr/bin/env node
import { config as zodConfig } from 'zod';
import { processIo } from './io.js';
import { run } from './program.js';

// A reader that closed early (`packwarden … | head`) is not an error worth a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

// One CLI process validates a handful of documents: zod's code-generating fast path costs more
// to build than it saves here (about 5 ms of a cold `pack verify`).
zodConfig({ jitless: true });

process.exitCode = await run(process.argv.slice(2), processIo());
