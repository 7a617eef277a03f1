import { libraryConfig } from '../../tsup.shared.js';

// Two entries: the whole client, and `./store` (browse a store without the install code).
export default libraryConfig(['src/index.ts', 'src/store-entry.ts']);
