import { readFileSync } from 'node:fs';

// Read at run time so the version printed is the one in the installed package.json. Read and
// parsed here rather than require()d: the CommonJS resolver would cost every start-up more
// (bench/README.md, "CLI start-up").
export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;
