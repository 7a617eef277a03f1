export { loadPackTrustRoot } from './load-trust-root.js';
export type { LoadPackTrustRootOptions } from './options.js';
export { selectTrustedKey } from './select-trusted-key.js';
export type {
  SelectTrustedKeyOptions,
  TrustedKeySelection,
  UntrustedKeyReason,
} from './select-trusted-key.js';
export { describeMissingTrustRoot, describeTrustRoot } from './describe-trust-root.js';
export { classifyTrustRoot, TRUST_ROOT_CONFIG_CODES } from './classify.js';
export type { TrustRootProblem } from './classify.js';
export type { TrustRootDescription } from './describe-trust-root.js';
export { parseDuration } from './duration.js';
export { parsePins } from './pins.js';
export { agentHippoAlias, TRUST_ROOT_ENV } from './env.js';
export type { EnvLike, TrustRootEnvName } from './env.js';
export { TRUST_ROOT_LIMITS } from './limits.js';
export { TrustRootError, isTrustRootError } from './errors.js';
export type { TrustRootErrorCode, TrustRootErrorOptions } from './errors.js';
export type { FetchLike } from './jwks-fetch.js';
export type {
  NoTrustRoot,
  OkTrustRoot,
  P256PublicJwk,
  PackTrustRoot,
  RejectedKey,
  RejectedKeyReason,
  TrustedKey,
  TrustRootDelivery,
  TrustRootSource,
  TrustRootSourceKind,
  TrustRootStatus,
  UnavailableTrustRoot,
} from './types.js';
export { TRUST_ROOT_ENV_VARIABLES } from './env-vars.js';
