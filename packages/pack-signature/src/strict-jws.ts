import { decodeCanonicalAlphabetChecked } from './base64url.js';
import { PACK_SIGNATURE_ALG, PACK_SIGNATURE_MAX_BYTES } from './constants.js';
import { kidProblem } from '@packwarden/pack-manifest/resolve';
import {
  isJsonObject,
  isPackManifestError,
  parseStrictJson,
} from '@packwarden/pack-manifest/resolve';

/** Why a `pack.sig` is malformed. Each is refused before any key is looked up. */
export type MalformedReason =
  /** `pack.sig` is a symlink, folder, FIFO or device. */
  | 'not-regular-file'
  /** Larger than `PACK_SIGNATURE_MAX_BYTES`. */
  | 'too-large'
  /** Nothing but (at most) a newline. */
  | 'empty'
  /** Something after the token's single trailing newline (a second line). */
  | 'trailing-data'
  /** A space, tab, carriage return or other whitespace. */
  | 'whitespace'
  /** `=` padding. */
  | 'padding'
  /** A character outside the base64url alphabet and `.` (non-ASCII included). */
  | 'invalid-character'
  /** Not exactly three `.`-separated segments. */
  | 'segment-count'
  /** A segment that decodes but is not the canonical encoding of its bytes. */
  | 'non-canonical-base64url'
  /** Header or payload is not UTF-8 JSON (or is nested too deeply). */
  | 'invalid-json'
  /** Header or payload repeats an object key. */
  | 'duplicate-key'
  /** Header or payload is JSON, but not an object. */
  | 'not-an-object'
  /** `alg` is missing or not exactly `ES256`. */
  | 'alg'
  /** A header parameter other than `alg`, `typ`, `kid` (`crit`, `b64`, `jku`, `jwk`, `x5u`, `x5c`, …). */
  | 'header-parameter'
  /** `typ` is present and not exactly `JWT`. */
  | 'typ'
  /** `kid` missing, empty, too long, or with path, control or whitespace characters. */
  | 'kid'
  /** Payload `iat` missing or not a whole number of seconds (needed to pick the key). */
  | 'iat'
  /** The signature is not 64 bytes (ES256 is `r || s`; a DER signature is refused). */
  | 'signature-length';

export interface PackSignatureHeader {
  alg: 'ES256';
  typ?: 'JWT';
  kid: string;
}

/** A compact JWS that passed the structural checks (header included), payload not yet read. */
export interface ParsedCompactJws {
  /** The token without its trailing newline. */
  token: string;
  header: PackSignatureHeader;
  /** `BASE64URL(header) || '.' || BASE64URL(payload)`, the bytes the signature covers. */
  signingInput: string;
  payloadBytes: Uint8Array;
  /** 64 bytes, `r || s`. */
  signature: Uint8Array;
}

/** A `pack.sig` token that passed every structural check; its payload is still UNVERIFIED. */
export interface ParsedPackToken extends ParsedCompactJws {
  /** The decoded payload object, not checked against any schema, not verified. */
  payload: Record<string, unknown>;
  /** The payload's `iat`, used only to pick the key that must then verify the signature. */
  iat: number;
}

export type StrictParseResult<T> =
  { ok: true; value: T } | { ok: false; reason: MalformedReason; message: string };

const ALLOWED_HEADER_PARAMETERS = new Set(['alg', 'typ', 'kid']);
/** The base64url alphabet and the segment separator. */
const TOKEN_ALPHABET = /^[A-Za-z0-9_.-]*$/;
// new Date(ms) is valid up to 8.64e15 ms.
const MAX_DATE_SECONDS = 8_640_000_000_000;
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function refuse<T>(reason: MalformedReason, message: string): StrictParseResult<T> {
  return { ok: false, reason, message };
}

/**
 * The structural checks of the README ("The strict pre-parser") on the text of a `pack.sig` (one trailing
 * `\n` allowed): three canonical base64url segments, a JSON-object header with exactly the
 * allowed parameters, `alg` `ES256`, a safe `kid`, a 64-byte signature. The payload bytes are
 * returned undecoded.
 */
export function parseCompactJws(text: string): StrictParseResult<ParsedCompactJws> {
  if (text.length > PACK_SIGNATURE_MAX_BYTES) {
    return refuse('too-large', `the token is larger than ${PACK_SIGNATURE_MAX_BYTES} bytes`);
  }
  const token = text.endsWith('\n') ? text.slice(0, -1) : text;
  if (token.length === 0) return refuse('empty', 'pack.sig holds no token');
  // One scan for the usual token; the refusals below, in their order, only for one that fails it
  // (nothing it admits holds a line break, whitespace or padding).
  if (!TOKEN_ALPHABET.test(token)) {
    if (token.includes('\n')) {
      return refuse('trailing-data', 'pack.sig holds more than one line');
    }
    if (/[\s\u0085]/.test(token)) {
      return refuse('whitespace', 'the token contains whitespace');
    }
    if (token.includes('=')) return refuse('padding', 'the token contains "=" padding');
    return refuse('invalid-character', 'the token contains a character outside base64url');
  }
  const segments = token.split('.');
  if (segments.length !== 3) {
    return refuse(
      'segment-count',
      `a compact JWS has 3 segments separated by ".", this token has ${segments.length}`,
    );
  }
  const [headerSegment, payloadSegment, signatureSegment] = segments as [string, string, string];
  const decoded: Uint8Array[] = [];
  for (const [name, segment] of [
    ['header', headerSegment],
    ['payload', payloadSegment],
    ['signature', signatureSegment],
  ] as const) {
    const bytes = decodeCanonicalAlphabetChecked(segment);
    if (bytes === undefined) {
      return refuse('non-canonical-base64url', `the ${name} is not canonical base64url`);
    }
    decoded.push(bytes);
  }
  const [headerBytes, payloadBytes, signature] = decoded as [Uint8Array, Uint8Array, Uint8Array];

  const header = parseJsonObject(headerBytes, 'header');
  if (!header.ok) return header;
  const fields = header.value;
  if (fields['alg'] !== PACK_SIGNATURE_ALG) {
    return refuse(
      'alg',
      `alg must be ${PACK_SIGNATURE_ALG}, found ${describeValue(fields['alg'])}`,
    );
  }
  const extra = Object.keys(fields).filter((name) => !ALLOWED_HEADER_PARAMETERS.has(name));
  if (extra.length > 0) {
    return refuse(
      'header-parameter',
      `header parameters other than alg, typ and kid are refused: ${extra
        .slice(0, 5)
        .map((name) => describeValue(name))
        .join(', ')}`,
    );
  }
  if ('typ' in fields && fields['typ'] !== 'JWT') {
    return refuse('typ', `typ must be "JWT" when present, found ${describeValue(fields['typ'])}`);
  }
  const kid = fields['kid'];
  if (kid === undefined) return refuse('kid', 'the header has no kid');
  const kidIssue = kidProblem(kid);
  if (kidIssue !== undefined) return refuse('kid', `unusable kid in header: ${kidIssue}`);

  if (signature.length !== 64) {
    return refuse(
      'signature-length',
      `an ES256 signature is 64 bytes (r || s), this one is ${signature.length}`,
    );
  }
  return {
    ok: true,
    value: {
      token,
      header: {
        alg: PACK_SIGNATURE_ALG,
        ...('typ' in fields ? { typ: 'JWT' as const } : {}),
        kid: kid as string,
      },
      signingInput: `${headerSegment}.${payloadSegment}`,
      payloadBytes,
      signature,
    },
  };
}

/**
 * `parseCompactJws` plus the payload rules that must hold before a key is looked up: a JSON
 * object without duplicate keys, with a whole-number `iat`.
 */
export function parsePackToken(text: string): StrictParseResult<ParsedPackToken> {
  const jws = parseCompactJws(text);
  if (!jws.ok) return jws;
  const payload = parseJsonObject(jws.value.payloadBytes, 'payload');
  if (!payload.ok) return payload;
  const iat = payload.value['iat'];
  if (typeof iat !== 'number' || !Number.isSafeInteger(iat) || iat < 0 || iat > MAX_DATE_SECONDS) {
    return refuse(
      'iat',
      `payload iat must be whole seconds since the epoch, found ${describeValue(iat)}`,
    );
  }
  return { ok: true, value: { ...jws.value, payload: payload.value, iat } };
}

function parseJsonObject(
  bytes: Uint8Array,
  part: 'header' | 'payload',
): StrictParseResult<Record<string, unknown>> {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return refuse('invalid-json', `the ${part} is not UTF-8`);
  }
  let value: unknown;
  try {
    // The package-wide strict parser (pack-manifest README, "Strict JSON"); the token's size is
    // already bounded by PACK_SIGNATURE_MAX_BYTES.
    value = parseStrictJson(text, { what: `the ${part}`, maxBytes: PACK_SIGNATURE_MAX_BYTES });
  } catch (error) {
    if (isPackManifestError(error) && error.code === 'ERR_JSON_DUPLICATE_KEY') {
      return refuse('duplicate-key', error.message);
    }
    if (isPackManifestError(error)) return refuse('invalid-json', error.message);
    throw error;
  }
  if (!isJsonObject(value)) return refuse('not-an-object', `the ${part} is not a JSON object`);
  return { ok: true, value };
}

/** A short, printable-ASCII rendering of an untrusted value for a message. */
function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = (JSON.stringify(value) ?? String(value)).replace(
    /[^\x20-\x7e]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
