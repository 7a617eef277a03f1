import { isSemver } from '@packwarden/pack-manifest';
import { StoreError } from './errors.js';

export type ArtifactType = 'pack' | 'skill' | 'mcp' | 'engine';

export interface ArtifactRef {
  type: ArtifactType;
  slug: string;
  version?: string;
}

export const ARTIFACT_TYPES: readonly ArtifactType[] = ['pack', 'skill', 'mcp', 'engine'];

const TYPE_ALIASES: Record<string, ArtifactType> = {
  pack: 'pack',
  packs: 'pack',
  'agent-packs': 'pack',
  skill: 'skill',
  skills: 'skill',
  mcp: 'mcp',
  // The AgentHippo store's index type and folder (its scripts/build-index.ts, ARTIFACT_DIRS).
  engine: 'engine',
  engines: 'engine',
};

/** Slugs end up in URLs, git tags and folder names: kebab-case only, like pack names. */
export const SLUG_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const SLUG_MAX_LENGTH = 64;

export function isSlug(value: string): boolean {
  return value.length <= SLUG_MAX_LENGTH && SLUG_PATTERN.test(value);
}

/** The canonical type for an alias (`packs`, `agent-packs`, `skills`…), or `undefined`. */
export function normalizeArtifactType(value: string): ArtifactType | undefined {
  return Object.hasOwn(TYPE_ALIASES, value) ? TYPE_ALIASES[value] : undefined;
}

/** Parses `<type>/<slug>[@<version>]`. */
export function parseArtifactRef(ref: string): ArtifactRef {
  const fail = (why: string): never => {
    throw new StoreError(
      'ERR_REF_INVALID',
      `${JSON.stringify(ref.slice(0, 200))} is not an artifact reference (${why}); write <type>/<slug>[@<version>], e.g. pack/code-reviewer@1.2.0`,
      { subject: ref },
    );
  };
  if (typeof ref !== 'string' || ref.length > 400) return fail('not a short string');
  const slash = ref.indexOf('/');
  if (slash < 0) return fail('no type');
  const type = normalizeArtifactType(ref.slice(0, slash));
  if (!type)
    return fail(
      `unknown type ${JSON.stringify(ref.slice(0, slash))}: use pack, skill, mcp or engine`,
    );
  const rest = ref.slice(slash + 1);
  const at = rest.indexOf('@');
  const slug = at < 0 ? rest : rest.slice(0, at);
  if (!isSlug(slug)) return fail('the slug must be kebab-case, at most 64 characters');
  if (at < 0) return { type, slug };
  const version = rest.slice(at + 1).replace(/^v(?=\d)/, '');
  if (!isSemver(version)) return fail('the version must be a semantic version such as 1.2.0');
  return { type, slug, version };
}

export function formatArtifactRef(ref: ArtifactRef): string {
  return `${ref.type}/${ref.slug}${ref.version ? `@${ref.version}` : ''}`;
}
