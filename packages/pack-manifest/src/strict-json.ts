/**
 * The one strict JSON parser of packwarden (RFC 8259), for every document whose meaning must not
 * depend on which parser reads it: `pack.sig` headers and payloads, trust-root key documents and
 * caches, store indexes. It refuses what `JSON.parse` lets through silently: duplicate object
 * members (where `JSON.parse` keeps the last, so `{"kid": A, "kid": B}` means B to one reader and
 * A to another), escaped lone surrogates, nesting deeper than a small bound, and text larger than
 * a size bound. A `"__proto__"` member stays a plain member. Errors are `PackManifestError`s with
 * `ERR_JSON_*` codes (this package's README, "Strict JSON").
 */
import { PackManifestError } from './errors.js';

/** Default `maxDepth`: nested arrays and objects. */
export const STRICT_JSON_MAX_DEPTH = 32;
/** Default `maxBytes`: UTF-8 length of the text. */
export const STRICT_JSON_MAX_BYTES = 4 * 1024 * 1024;

export interface StrictJsonOptions {
  /** Refuse arrays and objects nested deeper than this. Default 32. */
  maxDepth?: number;
  /** Refuse text whose UTF-8 encoding is longer than this, before parsing. Default 4 MiB. */
  maxBytes?: number;
  /** Names the document in messages. Default `JSON`. */
  what?: string;
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
// A run of string characters that stand for themselves: no quote, backslash, control character
// or surrogate (code units: no `u` flag). Skipping such runs with the regular expression engine
// is ~4× faster than a loop over `charCodeAt` for the long strings of a `pack.sig` payload.
// eslint-disable-next-line no-control-regex -- control characters are what it stops at
const PLAIN_RUN = /[^"\\\u0000-\u001f\ud800-\udfff]*/y;

/** Parses `text` as one JSON value; throws `PackManifestError` (`ERR_JSON_*`) when it is not. */
export function parseStrictJson(text: string, options: StrictJsonOptions = {}): unknown {
  const maxDepth = options.maxDepth ?? STRICT_JSON_MAX_DEPTH;
  const maxBytes = options.maxBytes ?? STRICT_JSON_MAX_BYTES;
  const what = options.what ?? 'JSON';
  if (typeof text !== 'string') {
    throw new PackManifestError('ERR_JSON_SYNTAX', `${what} is not text`);
  }
  // Cheap before exact: a string longer than maxBytes code units is longer in UTF-8 too.
  if (text.length > maxBytes || Buffer.byteLength(text, 'utf8') > maxBytes) {
    throw new PackManifestError('ERR_JSON_TOO_LARGE', `${what} is larger than ${maxBytes} bytes`);
  }
  let at = 0;

  const fail = (message: string): never => {
    throw new PackManifestError(
      'ERR_JSON_SYNTAX',
      `${what} is not JSON: ${message} at offset ${at}`,
    );
  };
  const skipWhitespace = (): void => {
    while (at < text.length) {
      const c = text.charCodeAt(at);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) at += 1;
      else break;
    }
  };
  const expectLiteral = (literal: string, value: unknown): unknown => {
    if (text.startsWith(literal, at)) {
      at += literal.length;
      return value;
    }
    return fail('unexpected token');
  };

  const parseString = (): string => {
    // text[at] is the opening quote
    at += 1;
    let out = '';
    let runStart = at;
    for (;;) {
      PLAIN_RUN.lastIndex = at;
      PLAIN_RUN.test(text);
      at = PLAIN_RUN.lastIndex;
      if (at >= text.length) fail('unterminated string');
      const c = text.charCodeAt(at);
      if (c === 0x22) {
        out += text.slice(runStart, at);
        at += 1;
        break;
      }
      if (c < 0x20) fail('control character in string');
      if (c >= 0xd800 && c <= 0xdfff) {
        // Raw surrogates only come from a UTF-16 source; they must pair up.
        const next = text.charCodeAt(at + 1);
        if (c > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) fail('lone surrogate in string');
        at += 2;
        continue;
      }
      if (c !== 0x5c) {
        at += 1;
        continue;
      }
      out += text.slice(runStart, at);
      const escape = text[at + 1];
      at += 2;
      switch (escape) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          const unit = readHex4();
          if (unit >= 0xd800 && unit <= 0xdbff) {
            if (text[at] !== '\\' || text[at + 1] !== 'u') fail('lone surrogate escape');
            at += 2;
            const low = readHex4();
            if (low < 0xdc00 || low > 0xdfff) fail('lone surrogate escape');
            out += String.fromCharCode(unit, low);
          } else if (unit >= 0xdc00 && unit <= 0xdfff) {
            fail('lone surrogate escape');
          } else {
            out += String.fromCharCode(unit);
          }
          break;
        }
        default:
          fail('invalid escape');
      }
      runStart = at;
    }
    return out;
  };

  const readHex4 = (): number => {
    const hex = text.slice(at, at + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('invalid \\u escape');
    at += 4;
    return Number.parseInt(hex, 16);
  };

  const parseValue = (depth: number): unknown => {
    skipWhitespace();
    const c = text[at];
    switch (c) {
      case '{':
        return parseObject(depth + 1);
      case '[':
        return parseArray(depth + 1);
      case '"':
        return parseString();
      case 't':
        return expectLiteral('true', true);
      case 'f':
        return expectLiteral('false', false);
      case 'n':
        return expectLiteral('null', null);
      default: {
        NUMBER.lastIndex = at;
        const match = NUMBER.exec(text);
        if (!match) return fail('unexpected token');
        at += match[0].length;
        return Number(match[0]);
      }
    }
  };

  const checkDepth = (depth: number): void => {
    if (depth > maxDepth) {
      throw new PackManifestError(
        'ERR_JSON_TOO_DEEP',
        `${what} nests arrays and objects deeper than ${maxDepth} levels`,
      );
    }
  };

  const parseObject = (depth: number): Record<string, unknown> => {
    checkDepth(depth);
    at += 1;
    const entries: [string, unknown][] = [];
    const seen = new Set<string>();
    skipWhitespace();
    if (text[at] === '}') {
      at += 1;
      return {};
    }
    for (;;) {
      skipWhitespace();
      if (text[at] !== '"') fail('expected a string key');
      const key = parseString();
      if (seen.has(key)) {
        const shown = JSON.stringify(key.slice(0, 40)).replace(/[^\x20-\x7e]/g, '?');
        throw new PackManifestError(
          'ERR_JSON_DUPLICATE_KEY',
          `${what} repeats the member ${shown}`,
        );
      }
      seen.add(key);
      skipWhitespace();
      if (text[at] !== ':') fail('expected ":"');
      at += 1;
      entries.push([key, parseValue(depth)]);
      skipWhitespace();
      if (text[at] === ',') {
        at += 1;
        continue;
      }
      if (text[at] === '}') {
        at += 1;
        break;
      }
      fail('expected "," or "}"');
    }
    // Object.fromEntries defines own data properties: a "__proto__" key stays a plain key.
    return Object.fromEntries(entries);
  };

  const parseArray = (depth: number): unknown[] => {
    checkDepth(depth);
    at += 1;
    const items: unknown[] = [];
    skipWhitespace();
    if (text[at] === ']') {
      at += 1;
      return items;
    }
    for (;;) {
      items.push(parseValue(depth));
      skipWhitespace();
      if (text[at] === ',') {
        at += 1;
        continue;
      }
      if (text[at] === ']') {
        at += 1;
        break;
      }
      fail('expected "," or "]"');
    }
    return items;
  };

  const value = parseValue(0);
  skipWhitespace();
  if (at !== text.length) fail('trailing data after the JSON value');
  return value;
}

/** A JSON object (not an array, not null). */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
