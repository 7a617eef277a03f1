import { isLoopbackHost } from '../url-policy.js';
import { ociError } from './errors.js';

/**
 * An `oci://` reference to a pack artifact in a registry (OCI.md "References").
 * `registry` is `host[:port]` as written (lower-cased); `repository` follows the distribution
 * spec's name grammar; at most one of `tag` and `digest`.
 */
export interface OciReference {
  registry: string;
  repository: string;
  tag?: string | undefined;
  digest?: string | undefined;
  /** The registry's base URL: `https://host[:port]`, or `http://` when `plainHttp` was allowed. */
  baseUrl: URL;
  plainHttp: boolean;
}

export interface ParseOciReferenceOptions {
  /** Talk plain HTTP to the registry. Refused (`ERR_OCI_PLAIN_HTTP_REFUSED`) unless the host is loopback. */
  plainHttp?: boolean;
}

// The distribution spec's grammar ("Pulling manifests"): a repository name is path components of
// [a-z0-9]+ joined by `.`, `_`, `__` or runs of `-`, separated by `/`; a tag is
// [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}. Registries refuse names of more than 255 characters
// together with the host, as Docker's reference grammar does.
const COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
export const OCI_REPOSITORY_PATTERN = new RegExp(`^${COMPONENT}(?:/${COMPONENT})*$`);
export const OCI_TAG_PATTERN = /^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$/;
/** Only sha256 digests: the artifact is written with sha256, and a digest we cannot check is refused. */
export const OCI_DIGEST_PATTERN = /^sha256:[a-f0-9]{64}$/;
const HOST_PATTERN =
  /^(?:(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[[0-9a-f:.]+\])(?::(?:[1-9][0-9]{0,4}))?$/;
const MAX_REFERENCE_LENGTH = 512;
const MAX_NAME_LENGTH = 255;

export function isOciReference(value: string): boolean {
  return typeof value === 'string' && value.startsWith('oci://');
}

/** Parses `oci://HOST[:PORT]/REPO[:TAG|@sha256:HEX]`, strictly. */
export function parseOciReference(
  ref: string,
  options: ParseOciReferenceOptions = {},
): OciReference {
  const fail = (why: string): never => {
    throw ociError(
      'ERR_OCI_REF_INVALID',
      `${JSON.stringify(String(ref).slice(0, 200))} is not an OCI reference (${why}); write oci://HOST[:PORT]/REPO[:TAG|@sha256:HEX], e.g. oci://ghcr.io/acme/packs/reviewer:1.2.0`,
      { subject: typeof ref === 'string' ? ref.slice(0, 200) : undefined },
    );
  };
  if (typeof ref !== 'string' || ref.length > MAX_REFERENCE_LENGTH) return fail('too long');
  if (!ref.startsWith('oci://')) return fail('it must start with oci://');
  const rest = ref.slice('oci://'.length);
  const slash = rest.indexOf('/');
  if (slash <= 0) return fail('no repository after the registry host');
  const registry = rest.slice(0, slash).toLowerCase();
  if (!HOST_PATTERN.test(registry)) return fail('the registry must be HOST or HOST:PORT');
  const port = /:(\d+)$/.exec(registry)?.[1];
  if (port !== undefined && Number(port) > 65535) return fail('the port is out of range');
  let path = rest.slice(slash + 1);
  let digest: string | undefined;
  let tag: string | undefined;
  const at = path.indexOf('@');
  if (at >= 0) {
    digest = path.slice(at + 1);
    path = path.slice(0, at);
    if (!OCI_DIGEST_PATTERN.test(digest)) return fail('the digest must be sha256: and 64 hex');
  }
  const colon = path.lastIndexOf(':');
  if (colon >= 0) {
    tag = path.slice(colon + 1);
    path = path.slice(0, colon);
    if (!OCI_TAG_PATTERN.test(tag))
      return fail('a tag is up to 128 of [A-Za-z0-9_.-], not starting with . or -');
    if (digest !== undefined) return fail('give a tag or a digest, not both');
  }
  if (!OCI_REPOSITORY_PATTERN.test(path))
    return fail(
      'the repository must be lower-case path components of [a-z0-9] joined by ., _, __ or -',
    );
  if (registry.length + 1 + path.length > MAX_NAME_LENGTH)
    return fail(`the name is longer than ${MAX_NAME_LENGTH} characters`);
  const plainHttp = options.plainHttp === true;
  const hostname = registry.replace(/:\d+$/, '');
  if (plainHttp && !isLoopbackHost(hostname)) {
    throw ociError(
      'ERR_OCI_PLAIN_HTTP_REFUSED',
      `plain HTTP is allowed only for a registry on a loopback address (localhost, 127.0.0.0/8, [::1]), not ${registry}; use https`,
      { subject: registry },
    );
  }
  // Docker Hub's references name docker.io; its distribution API is served by registry-1.
  const apiHost =
    registry === 'docker.io' || registry === 'index.docker.io' ? 'registry-1.docker.io' : registry;
  const baseUrl = new URL(`${plainHttp ? 'http' : 'https'}://${apiHost}/`);
  return {
    registry,
    repository: path,
    ...(tag !== undefined ? { tag } : {}),
    ...(digest !== undefined ? { digest } : {}),
    baseUrl,
    plainHttp,
  };
}

/** `oci://registry/repository[:tag|@digest]`. */
export function formatOciReference(
  ref: Pick<OciReference, 'registry' | 'repository' | 'tag' | 'digest'>,
): string {
  const suffix = ref.digest ? `@${ref.digest}` : ref.tag ? `:${ref.tag}` : '';
  return `oci://${ref.registry}/${ref.repository}${suffix}`;
}
