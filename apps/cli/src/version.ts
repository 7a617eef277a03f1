import { createRequire } from 'node:module';

// Read at run time so the version printed is the one in the installed package.json.
const require = createRequire(import.meta.url);
export const VERSION: string = (require('../package.json') as { version: string }).version;
