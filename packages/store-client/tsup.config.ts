import { libraryConfig } from '../../tsup.shared.js';

// Three entries: the whole client, `./store` (browse a store without the install code) and
// `./env` (the variables it reads, for `packwarden env`).
export default libraryConfig(['src/index.ts', 'src/store-entry.ts', 'src/env-vars.ts']);
