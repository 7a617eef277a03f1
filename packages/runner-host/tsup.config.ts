import { copyFile } from 'node:fs/promises';
import { libraryConfig } from '../../tsup.shared.js';

export default libraryConfig(
  {
    index: 'src/index.ts',
    protocol: 'src/protocol.ts',
    conformance: 'src/conformance/index.ts',
    'conformance-cli': 'src/conformance/cli.ts',
  },
  {
    dts: {
      entry: {
        index: 'src/index.ts',
        protocol: 'src/protocol.ts',
        conformance: 'src/conformance/index.ts',
      },
    },
    // The JSON Schema is generated from the zod schemas (`pnpm generate:schema`) and checked in;
    // a test fails when it drifts from them.
    onSuccess: () => copyFile('src/frames.schema.json', 'dist/frames.schema.json'),
  },
);
