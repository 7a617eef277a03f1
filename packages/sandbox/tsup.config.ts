import { libraryConfig } from '../../tsup.shared.js';

// Two entries: the sandbox, and `./env` (the variables it reads, for `packwarden env`).
export default libraryConfig(['src/index.ts', 'src/env-vars.ts']);
