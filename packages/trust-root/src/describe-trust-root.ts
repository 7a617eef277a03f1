import { agentHippoAlias, TRUST_ROOT_ENV } from './env.js';
import type { TrustRootErrorCode } from './errors.js';
import type {
  PackTrustRoot,
  RejectedKeyReason,
  TrustRootDelivery,
  TrustRootSource,
  TrustRootStatus,
} from './types.js';

/** A plain JSON summary of a trust root (what `packwarden trust show --json` prints). */
export interface TrustRootDescription {
  readonly version: 1;
  readonly status: TrustRootStatus;
  readonly source: TrustRootSource;
  readonly reason: string | null;
  readonly code: TrustRootErrorCode | null;
  readonly retryable: boolean | null;
  readonly stale: boolean;
  readonly delivery: TrustRootDelivery | null;
  readonly fetchedAt: string | null;
  readonly validatedAt: string | null;
  readonly expiresAt: string | null;
  readonly keys: readonly {
    readonly kid: string;
    readonly thumbprint: string;
    readonly alg: 'ES256';
    readonly crv: 'P-256';
    readonly notBefore: string | null;
    readonly notAfter: string | null;
    readonly revoked: boolean;
  }[];
  readonly rejectedKeys: readonly {
    readonly kid: string | null;
    readonly thumbprint: string | null;
    readonly reason: RejectedKeyReason;
    readonly message: string;
  }[];
  readonly warnings: readonly string[];
}

export function describeTrustRoot(root: PackTrustRoot): TrustRootDescription {
  return {
    version: 1,
    status: root.status,
    source: {
      ...root.source,
      ...(root.source.pins === undefined ? {} : { pins: [...root.source.pins] }),
    },
    reason: root.status === 'ok' ? null : root.reason,
    code: root.status === 'unavailable' ? root.code : null,
    retryable: root.status === 'unavailable' ? root.retryable : null,
    stale: root.stale,
    delivery: root.delivery ?? null,
    fetchedAt: iso(root.fetchedAt),
    validatedAt: iso(root.validatedAt),
    expiresAt: iso(root.expiresAt),
    keys: root.keys.map((key) => ({
      kid: key.kid,
      thumbprint: key.thumbprint,
      alg: 'ES256',
      crv: 'P-256',
      notBefore: iso(key.notBefore),
      notAfter: iso(key.notAfter),
      revoked: key.revoked,
    })),
    rejectedKeys: root.rejectedKeys.map((rejected) => ({
      kid: rejected.kid ?? null,
      thumbprint: rejected.thumbprint ?? null,
      reason: rejected.reason,
      message: rejected.message,
    })),
    warnings: [...root.warnings],
  };
}

/** The message for `none`: why nothing can be trusted, and each way to configure a trust root. */
export function describeMissingTrustRoot(): string {
  const env = (name: (typeof TRUST_ROOT_ENV)[keyof typeof TRUST_ROOT_ENV]): string =>
    `${name} (or ${agentHippoAlias(name)})`;
  return [
    'No trust root is configured, so no pack signature can be trusted. Configure one of:',
    '  --keys FILE                  a JSON file {"<kid>": "<PEM public key>"} or a JWKS {"keys": [...]}',
    `  ${env(TRUST_ROOT_ENV.signingKeys)}`,
    '                               the same JSON, inline',
    `  --jwks URL [--pin THUMBPRINT]..., or ${env(TRUST_ROOT_ENV.jwksUrl)}`,
    `                               with ${env(TRUST_ROOT_ENV.jwksPins)}: an HTTPS JWKS, pinned by RFC 7638 thumbprints`,
    `  ${env(TRUST_ROOT_ENV.leaseUrl)}`,
    '                               the control plane; keys are read from <origin>/api/keys',
  ].join('\n');
}

function iso(date: Date | undefined): string | null {
  return date === undefined ? null : date.toISOString();
}
