/**
 * Every bound the OCI client puts on what a registry (or a token server, or a Docker config file)
 * can make it read or do. Each is a refusal, never a truncation. See OCI.md "Limits".
 */
export interface OciLimits {
  /** Bytes of one manifest. The distribution spec asks registries to accept at least 4 MiB. */
  maxManifestBytes: number;
  /** Bytes of the pack layer (declared in the manifest and counted while streaming). */
  maxLayerBytes: number;
  /** Bytes of a token endpoint's answer. */
  maxTokenResponseBytes: number;
  /** Bytes of one page of `/tags/list`. */
  maxTagsPageBytes: number;
  /** Pages of `/tags/list` followed through `Link: <…>; rel="next"`. */
  maxTagPages: number;
  /** Tags in total over all pages. */
  maxTags: number;
  /** Bytes of an error body read to explain a refusal. */
  maxErrorBodyBytes: number;
  /** Characters of one `WWW-Authenticate` header. */
  maxChallengeLength: number;
  /** Bytes of the Docker `config.json`. */
  maxDockerConfigBytes: number;
  /** Annotations on the manifest, and characters of one annotation value. */
  maxAnnotations: number;
  maxAnnotationLength: number;
  /** Redirects followed for one GET. */
  maxRedirects: number;
}

export const DEFAULT_OCI_LIMITS: Readonly<OciLimits> = Object.freeze({
  maxManifestBytes: 4 * 1024 * 1024,
  maxLayerBytes: 1024 * 1024 * 1024,
  maxTokenResponseBytes: 1024 * 1024,
  maxTagsPageBytes: 4 * 1024 * 1024,
  maxTagPages: 100,
  maxTags: 10_000,
  maxErrorBodyBytes: 64 * 1024,
  maxChallengeLength: 4096,
  maxDockerConfigBytes: 1024 * 1024,
  maxAnnotations: 64,
  maxAnnotationLength: 4096,
  maxRedirects: 5,
});
