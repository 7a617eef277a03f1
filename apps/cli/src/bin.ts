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

// One CLI process validates a handful of documents: zod's code-generating fast path costs more
// to build than it saves here (about 5 ms of a cold `pack verify`). zod 4 adopts the config object
// it finds on globalThis when it loads, so commands that never validate (`--help`, `pack list`,
// `env`) do not load zod just to configure it (bench/README.md, "CLI start-up"); the drift test
// in test/startup.test.ts fails if a zod update stops reading it.
const zodGlobal = globalThis as { __zod_globalConfig?: Record<string, unknown> };
zodGlobal.__zod_globalConfig = { ...zodGlobal.__zod_globalConfig, jitless: true };

process.exitCode = await run(process.argv.slice(2), processIo());
