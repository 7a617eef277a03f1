import * as z from 'zod';
import { driverFrameSchemas, hostFrameSchemas } from './frames.js';

/**
 * The JSON Schema (draft 2020-12) of every frame, generated from the zod schemas. The package
 * ships the same document as `@packwarden/runner-host/frames.schema.json`.
 */
export function framesJsonSchema(): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  const refs = (schemas: Record<string, z.ZodType>, direction: string) =>
    Object.entries(schemas).map(([type, schema]) => {
      const name = `${direction}_${type}`;
      const { $schema: _ignored, ...definition } = z.toJSONSchema(schema, {
        io: 'input',
      }) as Record<string, unknown>;
      defs[name] = definition;
      return { $ref: `#/$defs/${name}` };
    });
  const driver = refs(driverFrameSchemas, 'driver');
  const host = refs(hostFrameSchemas, 'host');
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'urn:packwarden:runner-host:frames:v1',
    title: 'packwarden runner-host protocol v1 frames',
    description:
      'One JSON object per line. Frames of unknown type and unknown fields must be ignored by readers.',
    // ping, pong and fatal travel both ways, so the two directions overlap: anyOf, not oneOf.
    anyOf: [
      { title: 'driver to host', anyOf: driver },
      { title: 'host to driver', anyOf: host },
    ],
    $defs: defs,
  };
}
