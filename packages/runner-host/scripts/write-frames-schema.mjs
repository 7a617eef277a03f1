// Regenerates src/frames.schema.json from the built zod schemas (run `pnpm generate:schema`).
import { writeFile } from 'node:fs/promises';
import { framesJsonSchema } from '../dist/protocol.js';

const target = new URL('../src/frames.schema.json', import.meta.url);
await writeFile(target, `${JSON.stringify(framesJsonSchema(), null, 2)}\n`);
