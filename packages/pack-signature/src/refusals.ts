import type { MalformedReason } from './strict-jws.js';
import type { PackInvalid, PackVerification } from './results.js';

/** A refusal explained for people: what happened, the details, and how to fix it. */
export interface PackRefusalDescription {
  title: string;
  detail: string;
  fix: string;
}

const RESIGN =
  'If you changed the pack on purpose, sign it again: `packwarden pack sign <pack> --key FILE --kid KID`. Otherwise do not run it: get the pack again from its publisher.';

/**
 * Explains a verification result, with the fix. Meant for every result that is not `verified`
 * (for `verified` it says so, with an empty fix).
 */
export function describePackRefusal(result: PackVerification): PackRefusalDescription {
  switch (result.kind) {
    case 'verified':
      return { title: 'Signature verified', detail: result.message, fix: '' };
    case 'unsigned':
      return {
        title: 'The pack is not signed',
        detail: result.message,
        fix: 'Ask the publisher for a signed release, or sign it yourself with `packwarden pack sign <pack> --key FILE --kid KID` and trust that key. Packs without pack.sig are refused wherever signatures are required.',
      };
    case 'untrusted-key':
      return {
        title: `The signing key "${result.kid}" is not trusted`,
        detail: `${result.message} (${result.reason})`,
        fix: untrustedFix(result.reason),
      };
    case 'no-trust-root':
      return {
        title: 'No trust root is configured',
        detail: result.message,
        fix: 'Configure the keys you trust: `--keys FILE` or PACKWARDEN_PACK_SIGNING_KEYS, `--jwks URL --pin THUMBPRINT` or PACKWARDEN_PACK_JWKS_URL + PACKWARDEN_PACK_JWKS_PINS, or PACKWARDEN_LEASE_URL (AGENTHIPPO_* names work too).',
      };
    case 'trust-root-unavailable':
      return {
        title: 'The trust root is unavailable',
        detail: `${result.message}${result.code ? ` (${result.code})` : ''}`,
        fix: result.retryable
          ? 'The key source failed temporarily: try again later, and check that the JWKS / control-plane URL is reachable.'
          : 'Fix the trust root configuration (keys file, JWKS URL, pins) named above; retrying will not help until then.',
      };
    case 'digest-unsupported':
      return {
        title: 'Genuine signature, but the content cannot be checked',
        detail: result.message,
        fix: "This pack was signed with the AgentHippo runtime's unpublished digest rules (no digestAlg). Re-sign it with packwarden (`packwarden pack sign`) so its content is bound by packwarden-digest/1, or obtain a release signed that way.",
      };
    case 'invalid':
      return describeInvalid(result);
  }
}

function untrustedFix(reason: string): string {
  switch (reason) {
    case 'revoked':
      return 'The key was revoked: do not run this pack. Get a release signed with a current key.';
    case 'expired':
    case 'not-yet-valid':
      return "The key was not valid when the pack was signed (its iat is outside the key's notBefore/notAfter). Get a release signed with a key valid at signing time, or fix the key's validity window in the trust root if it is wrong.";
    case 'not-pinned':
      return 'The key is published but its thumbprint is not pinned: add its RFC 7638 thumbprint with `--pin` / PACKWARDEN_PACK_JWKS_PINS if you trust it.';
    case 'ambiguous-kid':
      return 'The trust root lists this kid more than once: fix the key source so each kid names one key.';
    default:
      return "Add the signer's public key to the trust root (`--keys`, JWKS, control plane) if you trust it; otherwise do not run this pack.";
  }
}

const MALFORMED_DETAIL: Record<MalformedReason, string> = {
  'not-regular-file': 'pack.sig is a symlink or special file',
  'too-large': 'pack.sig is larger than 4 MiB',
  empty: 'pack.sig is empty',
  'trailing-data': 'pack.sig has more than one line',
  whitespace: 'the token contains whitespace',
  padding: 'the token has "=" padding',
  'invalid-character': 'the token has characters outside base64url',
  'segment-count': 'the token is not three "."-separated segments',
  'non-canonical-base64url': 'a segment is not canonical base64url',
  'invalid-json': 'the header or payload is not JSON',
  'duplicate-key': 'the header or payload repeats a JSON key',
  'not-an-object': 'the header or payload is not a JSON object',
  alg: 'alg is not ES256',
  'header-parameter': 'the header has parameters other than alg, typ and kid',
  typ: 'typ is not JWT',
  kid: 'the kid is missing or unsafe',
  iat: 'the payload has no usable iat',
  'signature-length': 'the signature is not a 64-byte ES256 signature',
};

function describeInvalid(result: PackInvalid): PackRefusalDescription {
  switch (result.reason) {
    case 'malformed':
      return {
        title: 'pack.sig is malformed',
        detail: `${result.malformed ? `${MALFORMED_DETAIL[result.malformed]}: ` : ''}${result.message}`,
        fix: 'pack.sig must hold exactly one ES256 compact JWS as packwarden writes it. Sign the pack again with `packwarden pack sign`, or get it again from its publisher.',
      };
    case 'bad-signature':
      return {
        title: 'The signature does not verify',
        detail: result.message,
        fix: 'pack.sig was altered or made with a different key than the trusted one of that kid. Do not run this pack; get it again from its publisher.',
      };
    case 'payload-invalid':
      return {
        title: 'The signed payload is invalid',
        detail: result.message,
        fix: 'The signer produced a payload this verifier does not accept. Re-sign with a current packwarden (`packwarden pack sign`).',
      };
    case 'issued-in-future':
      return {
        title: 'The signature is dated in the future',
        detail: result.message,
        fix: "Check this machine's clock. If it is right, the signer's clock was wrong or the token was crafted: do not run this pack; get a release signed with a correct date.",
      };
    case 'manifest-invalid':
      return {
        title: 'agent.yaml cannot be read',
        detail: result.message,
        fix: 'Fix agent.yaml (`packwarden pack validate <pack>`); if it was changed after signing, get the pack again from its publisher.',
      };
    case 'identity-mismatch':
      return {
        title: 'pack.sig was made for another pack or version',
        detail: result.message,
        fix: `The signature names ${result.pack ?? '?'}@${result.packVersion ?? '?'}. Restore agent.yaml's name and version, or sign the pack again. ${RESIGN}`,
      };
    case 'unknown-digest-alg':
      return {
        title: 'Unknown digest algorithm',
        detail: result.message,
        fix: 'Update packwarden, or re-sign the pack with `packwarden pack sign` (packwarden-digest/1).',
      };
    case 'files-mismatch':
      return {
        title: 'The signed file list contradicts the signed digest',
        detail: result.message,
        fix: 'The signer produced an inconsistent token. Do not run this pack; re-sign it with `packwarden pack sign`.',
      };
    case 'digest-mismatch':
      return {
        title: 'The pack changed after it was signed',
        detail: result.message,
        fix: RESIGN,
      };
    case 'pack-unreadable':
      return {
        title: 'The pack cannot be read',
        detail: result.message,
        fix: 'Check the path and permissions, and remove FIFOs, sockets or devices from the pack folder.',
      };
  }
}
