import { SEMVER_PATTERN } from '@packwarden/pack-manifest';
import * as z from 'zod';
import { normalizeArtifactType, SLUG_MAX_LENGTH, SLUG_PATTERN, type ArtifactType } from './refs.js';

export const STATIC_STORE_FORMAT = 'packwarden-store/1';
export const STORE_INDEX_LIMITS = Object.freeze({
  maxBytes: 8 * 1024 * 1024,
  maxRows: 10_000,
  maxVersions: 1_000,
});

const text = (max: number) => z.string().max(max);
const slug = z.string().max(SLUG_MAX_LENGTH).regex(SLUG_PATTERN, 'must be kebab-case');
const semver = z.string().max(256).regex(SEMVER_PATTERN, 'must be a semantic version');
const hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex characters');

export const StaticStoreVersionSchema = z.object({
  version: semver,
  archive: z.string().min(1).max(2048).describe('archive URL, relative to index.json or absolute'),
  size: z
    .number()
    .int()
    .nonnegative()
    .max(Number.MAX_SAFE_INTEGER)
    .describe('archive size in bytes'),
  sha256: hex64.describe('SHA-256 of the archive file'),
  digest: hex64.describe(
    'Pack digest v1 (packwarden-digest/1) of the pack (of an engine: without its engine.sig)',
  ),
  signature: z
    .string()
    .max(4 * 1024 * 1024)
    .optional()
    .describe("the pack's pack.sig token (an engine's engine.sig token), when signed"),
  publishedAt: text(64).optional(),
});

export const StaticStoreArtifactSchema = z.object({
  type: z.enum(['pack', 'skill', 'mcp', 'engine']),
  slug,
  displayName: text(200).optional(),
  description: text(4000).optional(),
  tags: z.array(text(64)).max(64).optional(),
  author: text(200).optional(),
  latestVersion: semver,
  updatedAt: text(64).optional(),
  versions: z.array(z.unknown()).max(STORE_INDEX_LIMITS.maxVersions),
});

/** The whole document, as documented (the client parses it row by row, leniently). */
export const StaticStoreIndexSchema = z.object({
  format: z.literal(STATIC_STORE_FORMAT),
  artifacts: z
    .array(
      StaticStoreArtifactSchema.extend({
        versions: z.array(StaticStoreVersionSchema).max(STORE_INDEX_LIMITS.maxVersions),
      }),
    )
    .max(STORE_INDEX_LIMITS.maxRows),
});

export type StaticStoreIndex = z.infer<typeof StaticStoreIndexSchema>;
export type StaticStoreVersion = z.infer<typeof StaticStoreVersionSchema>;

/** The JSON Schema (draft 2020-12) of a static store's `index.json`. */
export function staticStoreIndexJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(StaticStoreIndexSchema) as Record<string, unknown>;
}

const looseText = (max: number) =>
  z
    .string()
    .optional()
    .nullable()
    .transform((v) => (typeof v === 'string' ? v.slice(0, max) : undefined));

/** The artifact type an AgentHippo index row's `type` names (its aliases included), if any. */
export function agentHippoArtifactType(value: string): ArtifactType | undefined {
  return (
    normalizeArtifactType(value) ??
    (value === 'agent-pack' || value === 'agent' ? 'pack' : undefined)
  );
}

export const AgentHippoArtifactSchema = z.object({
  id: z.union([z.string(), z.number()]).optional(),
  type: z.string().transform((value, ctx): ArtifactType => {
    const type = agentHippoArtifactType(value);
    if (!type) {
      ctx.addIssue({
        code: 'custom',
        message: `unknown artifact type ${JSON.stringify(value.slice(0, 40))}`,
      });
      return z.NEVER;
    }
    return type;
  }),
  slug,
  displayName: looseText(200),
  description: looseText(4000),
  tags: z
    .array(z.string())
    .optional()
    .nullable()
    .transform((tags) => (tags ? tags.slice(0, 64).map((t) => t.slice(0, 64)) : undefined)),
  author: looseText(200),
  latestVersion: semver,
  updatedAt: looseText(64),
});

export function describeZodError(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.length ? issue.path.join('.') : '(row)'}: ${issue.message}`)
    .join('; ');
}
