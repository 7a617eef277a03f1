#!/usr/bin/env node
import { processIo } from './io.js';
import { run } from './program.js';

// A reader that closed early (`packwarden … | head`) is not an error worth a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

process.exitCode = await run(process.argv.slice(2), processIo());
