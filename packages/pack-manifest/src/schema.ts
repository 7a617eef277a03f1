// Named imports, not the `z` namespace: bundlers can then leave out what is unused (zod's
// locales alone are most of its size), which is start-up time for every CLI command.
import {
  array,
  enum as zodEnum,
  literal,
  looseObject,
  record,
  strictObject,
  string,
  toJSONSchema,
  union,
  // `output` (what `z.infer` aliases), not `infer`: the bundled .d.ts would re-import it as
  // `import { infer } from 'zod'`, which does not parse (TS1003) in a consumer's project.
  type output as Infer,
} from 'zod';
import { PACK_NAME_MAX_LENGTH, PACK_NAME_PATTERN, SEMVER_PATTERN } from './names.js';

/** The only `apiVersion` of the Agent Pack Specification v1. */
export const AGENT_API_VERSION = 'agenthippo.ai/v1';
export const AGENT_KIND = 'Agent';
export const MANIFEST_FILE = 'agent.yaml';

export const FILE_ACCESS_LEVELS = ['read-only', 'workspace-write', 'full'] as const;
export type FileAccess = (typeof FILE_ACCESS_LEVELS)[number];

// A YAML scalar like `version: 1.2` is a number; say how to fix it rather than "expected string".
const stringOf = (what: string) =>
  string({
    error: (issue) =>
      issue.input === undefined ? 'is required' : `must be ${what} written as a string (quote it)`,
  });

const packName = stringOf('a kebab-case name')
  .max(PACK_NAME_MAX_LENGTH, { message: `must be at most ${PACK_NAME_MAX_LENGTH} characters` })
  .regex(PACK_NAME_PATTERN, {
    message:
      'must be kebab-case: lowercase letters and digits, words joined by single hyphens (e.g. "code-reviewer")',
  });

const semver = stringOf('a semantic version such as "1.2.0"')
  .max(256)
  .regex(SEMVER_PATTERN, { message: 'must be a semantic version such as 1.2.3 or 1.0.0-beta.1' });

const relativePath = string().min(1).max(4096);

/** Entries of `spec.permissions.network.allow`, and characters of one (README, "Network"). */
export const NETWORK_ALLOW_LIMITS = Object.freeze({ maxOrigins: 256, maxOriginLength: 2048 });

// One origin and nothing more: `http(s)://host[:port]` (a trailing `/` at most) or `host:port`.
// A host is a DNS name or IPv4 address (letters, digits, `-`, `_`, dots; no `*`) or a bracketed
// IPv6 address. Paths, queries, credentials and wildcards are refused here, so that a list never
// means more than it says; confinement parses each entry again before it admits anything.
const DNS_LABEL = '[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?';
const ORIGIN_HOST = `(?:(?:${DNS_LABEL}\\.)*${DNS_LABEL}\\.?|\\[[0-9A-Fa-f:.]{2,45}\\])`;
const ORIGIN_PORT =
  '(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])';
export const NETWORK_ORIGIN_PATTERN = new RegExp(
  `^(?:https?://${ORIGIN_HOST}(?::${ORIGIN_PORT})?/?|${ORIGIN_HOST}:${ORIGIN_PORT})$`,
);

const networkOrigin = string()
  .max(NETWORK_ALLOW_LIMITS.maxOriginLength, {
    message: `must be at most ${NETWORK_ALLOW_LIMITS.maxOriginLength} characters`,
  })
  .regex(NETWORK_ORIGIN_PATTERN, {
    message:
      'must be an origin: https://host[:port], http://host[:port] or host:port (no path, credentials or wildcards)',
  });

export const AgentMetadataSchema = looseObject({
  name: packName,
  version: semver,
  displayName: string().max(200).optional(),
  description: string().max(4000).optional(),
  author: union([
    string().max(200),
    looseObject({
      name: string().max(200),
      email: string().optional(),
      url: string().optional(),
    }),
  ]).optional(),
  license: string().max(200).optional(),
  homepage: string().max(2000).optional(),
  repository: string().max(2000).optional(),
  tags: array(string().max(100)).max(100).optional(),
  labels: record(string(), string()).optional(),
}).describe('Who the agent is: name and version identify the pack and are bound by pack.sig.');

export const AgentSpecSchema = looseObject({
  engine: string()
    .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, {
      message: 'must be an engine id such as "claude", "codex" or "my-engine"',
    })
    .optional(),
  model: string().max(200).optional(),
  skills: array(union([relativePath, looseObject({ path: relativePath })]))
    .max(1000)
    .optional(),
  prompts: looseObject({
    system: relativePath.optional(),
    rules: array(relativePath).max(1000).optional(),
  }).optional(),
  permissions: looseObject({
    fileAccess: zodEnum(FILE_ACCESS_LEVELS, {
      message: `must be one of ${FILE_ACCESS_LEVELS.join(', ')}`,
    }),
    // A packwarden extension, signed like the rest: the origins confined code may reach through
    // the sandbox's proxy (docs/sandbox.md, "Confinement").
    network: looseObject({
      allow: array(networkOrigin)
        .max(NETWORK_ALLOW_LIMITS.maxOrigins, {
          message: `must list at most ${NETWORK_ALLOW_LIMITS.maxOrigins} origins`,
        })
        .optional(),
    }),
  })
    .partial()
    .optional(),
  visibility: string().max(100).optional(),
}).describe('How the agent runs. Fields this version does not know are kept as they are.');

export const AgentManifestSchema = strictObject({
  apiVersion: literal(AGENT_API_VERSION, { message: `must be "${AGENT_API_VERSION}"` }),
  kind: literal(AGENT_KIND, { message: `must be "${AGENT_KIND}"` }),
  metadata: AgentMetadataSchema,
  spec: AgentSpecSchema.default({}),
}).describe('An Agent Pack manifest (agent.yaml), Agent Pack Specification v1.');

export type AgentManifest = Infer<typeof AgentManifestSchema>;
export type AgentMetadata = Infer<typeof AgentMetadataSchema>;
export type AgentSpec = Infer<typeof AgentSpecSchema>;

/** The JSON Schema (draft 2020-12) of `agent.yaml`, generated from the zod schema. */
export function agentManifestJsonSchema(): Record<string, unknown> {
  const schema = toJSONSchema(AgentManifestSchema, {
    target: 'draft-2020-12',
    io: 'input',
  }) as Record<string, unknown>;
  return {
    $id: 'https://packwarden.dev/schemas/agent-manifest/v1.json',
    title: 'Agent Pack manifest (agent.yaml), specification v1',
    ...schema,
  };
}
