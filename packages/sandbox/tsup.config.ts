import { libraryConfig } from '../../tsup.shared.js';

export default libraryConfig();
