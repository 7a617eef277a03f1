import { StoreError, type StoreErrorOptions } from '../errors.js';

/**
 * The failures that only OCI registries have. They are members of `StoreErrorCode` (the
 * package's one error class is `StoreError`); failures an OCI registry shares with the other
 * stores keep their existing codes: `ERR_STORE_FETCH` (network), `ERR_STORE_TIMEOUT`,
 * `ERR_STORE_HTTP_STATUS` (an unexpected status), `ERR_STORE_REDIRECT`, `ERR_STORE_URL_INVALID`
 * (a redirect to plain HTTP off loopback), `ERR_ABORTED`, `ERR_INVALID_ARGUMENT`.
 * See OCI.md "Errors" for what to do about each.
 */
export type OciErrorCode =
  // references and options
  /** Not `oci://HOST[:PORT]/REPO[:TAG|@sha256:HEX]`, or a part outside the distribution grammar. */
  | 'ERR_OCI_REF_INVALID'
  /** `plainHttp` asked for a registry that is not on a loopback address. */
  | 'ERR_OCI_PLAIN_HTTP_REFUSED'
  // authentication
  /** The Docker `config.json` is unreadable, not JSON, too large, or an `auths` entry is malformed. */
  | 'ERR_OCI_DOCKER_CONFIG_INVALID'
  /**
   * A `WWW-Authenticate` challenge that does not parse, names a scheme other than Basic / Bearer,
   * or, from an https registry, a token realm that is not https.
   */
  | 'ERR_OCI_AUTH_CHALLENGE_INVALID'
  /** The token endpoint refused, or answered without a usable `token` / `access_token`. */
  | 'ERR_OCI_TOKEN_FAILED'
  /** 401 / 403 from the registry after the credentials or token it asked for were presented. */
  | 'ERR_OCI_AUTH_FAILED'
  // reading the registry
  /** No such repository, tag or manifest (404 `MANIFEST_UNKNOWN` / `NAME_UNKNOWN`). */
  | 'ERR_OCI_NOT_FOUND'
  /** Without a tag, the repository has no tag that is a semantic version. */
  | 'ERR_OCI_NO_SEMVER_TAG'
  /** A tag list that is not `{ name, tags: string[] }`, over its bounds, or paginating forever. */
  | 'ERR_OCI_TAGS_INVALID'
  /** A manifest (or a token, tag list or error body) larger than its bound. */
  | 'ERR_OCI_RESPONSE_TOO_LARGE'
  /**
   * A manifest that is not strict JSON (a member named twice) or not a packwarden pack artifact
   * (media type, artifactType, config, layers, annotations).
   */
  | 'ERR_OCI_MANIFEST_INVALID'
  /** Manifest bytes whose sha256 is not the digest asked for, or not the `Docker-Content-Digest`. */
  | 'ERR_OCI_MANIFEST_DIGEST_MISMATCH'
  /** The layer is larger than `maxLayerBytes` (declared or while streaming). */
  | 'ERR_OCI_BLOB_TOO_LARGE'
  /** The layer's length differs from its descriptor's `size`. */
  | 'ERR_OCI_BLOB_SIZE_MISMATCH'
  /** The layer's bytes do not hash to its descriptor's digest. */
  | 'ERR_OCI_BLOB_DIGEST_MISMATCH'
  // writing the registry
  /** The registry broke the upload protocol (no `Location`, a wrong `Range`, another digest back). */
  | 'ERR_OCI_UPLOAD_FAILED'
  /** `immutableTags`: the tag already names another manifest (a re-published version). */
  | 'ERR_OCI_TAG_EXISTS'
  /** Reading the archive to push, or writing the pulled layer, failed on the local file system. */
  | 'ERR_OCI_IO';

export function ociError(
  code: OciErrorCode,
  message: string,
  options: StoreErrorOptions = {},
): StoreError {
  return new StoreError(code, message, options);
}
