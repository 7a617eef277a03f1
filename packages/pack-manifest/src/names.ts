// Names and versions, without zod or yaml: shared by the schema and by pack resolution, which
// must stay cheap to load (see the ./resolve entry point).

/** kebab-case: lowercase letters and digits in words joined by single hyphens, at most 64 characters. */
export const PACK_NAME_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const PACK_NAME_MAX_LENGTH = 64;
/** Semantic Versioning 2.0.0, the regular expression semver.org recommends. */
export const SEMVER_PATTERN =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

export function isPackName(value: string): boolean {
  return value.length <= PACK_NAME_MAX_LENGTH && PACK_NAME_PATTERN.test(value);
}

export function isSemver(value: string): boolean {
  return value.length <= 256 && SEMVER_PATTERN.test(value);
}
