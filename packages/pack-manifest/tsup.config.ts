import { libraryConfig } from '../../tsup.shared.js';

export default libraryConfig(['src/index.ts', 'src/resolve-entry.ts', 'src/fs-entry.ts']);
