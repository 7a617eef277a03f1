import { libraryConfig } from '../../tsup.shared.js';

export default libraryConfig(['src/index.ts', 'src/installed-entry.ts']);
