import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  PackManifestError,
  parseStrictJson,
  type PackManifestErrorCode,
  type StrictJsonOptions,
} from '@packwarden/pack-manifest/resolve';

function problem(text: string, options?: StrictJsonOptions): PackManifestErrorCode | 'ok' {
  try {
    parseStrictJson(text, options);
    return 'ok';
  } catch (error) {
    expect(error).toBeInstanceOf(PackManifestError);
    return (error as PackManifestError).code;
  }
}

describe('parseStrictJson', () => {
  it('parses what JSON.parse parses, to the same value', () => {
    for (const text of [
      '{}',
      '[]',
      '{"a":1,"b":[true,false,null],"c":{"d":"e"}}',
      ' { "kid" : "x" ,\n\t"alg":"ES256" } ',
      '"\\u00e9\\n\\"\\\\\\/\\b\\f\\r\\t"',
      '"\\ud83d\\ude00 😀"',
      '-0.5e+10',
      '0',
      '1E3',
      '123456789012345678901234567890',
    ]) {
      expect(parseStrictJson(text)).toEqual(JSON.parse(text));
    }
  });

  it('refuses duplicate keys, including escaped spellings and nested objects', () => {
    expect(problem('{"a":1,"a":2}')).toBe('ERR_JSON_DUPLICATE_KEY');
    expect(problem('{"a":1,"\\u0061":2}')).toBe('ERR_JSON_DUPLICATE_KEY');
    expect(problem('{"x":{"a":1,"a":1}}')).toBe('ERR_JSON_DUPLICATE_KEY');
    expect(problem('[{"a":1},{"a":1}]')).toBe('ok');
  });

  it('refuses what JSON.parse also refuses', () => {
    for (const text of [
      '',
      '{',
      '{"a"}',
      '{"a":1,}',
      '[1,]',
      '01',
      '1.',
      '.5',
      '+1',
      'NaN',
      "'a'",
      '{a:1}',
      '"\u0001"',
      '"\\x41"',
      'true false',
      '{"a":1}x',
      'nul',
    ]) {
      expect(() => JSON.parse(text)).toThrow();
      expect(problem(text), text).toBe('ERR_JSON_SYNTAX');
    }
  });

  it('refuses escaped lone surrogates, which JSON.parse lets through', () => {
    for (const text of ['"\\ud800"', '"\\udc00"', '"\\ud800\\u0041"', '"\\ud800x"']) {
      expect(() => JSON.parse(text)).not.toThrow();
      expect(problem(text)).toBe('ERR_JSON_SYNTAX');
    }
  });

  it('bounds nesting depth', () => {
    expect(problem(`${'['.repeat(32)}${']'.repeat(32)}`)).toBe('ok');
    expect(problem(`${'['.repeat(33)}${']'.repeat(33)}`)).toBe('ERR_JSON_TOO_DEEP');
    expect(problem(`${'{"a":'.repeat(100000)}1${'}'.repeat(100000)}`)).toBe('ERR_JSON_TOO_DEEP');
  });

  it('keeps "__proto__" as a plain key', () => {
    const value = parseStrictJson('{"__proto__":{"polluted":true}}') as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
  });

  it('bounds size before parsing, in UTF-8 bytes', () => {
    expect(problem('"é"', { maxBytes: 4 })).toBe('ok');
    expect(problem('"éé"', { maxBytes: 5 })).toBe('ERR_JSON_TOO_LARGE');
    expect(problem(`[${'1,'.repeat(10)}1]`, { maxBytes: 10 })).toBe('ERR_JSON_TOO_LARGE');
    expect(problem('[[[]]]', { maxDepth: 2 })).toBe('ERR_JSON_TOO_DEEP');
  });

  it('names the document in its messages', () => {
    expect(() => parseStrictJson('{"a":1,"a":2}', { what: 'keys file k.json' })).toThrow(
      /keys file k\.json repeats the member "a"/,
    );
  });

  it('agrees with JSON.parse on any JSON without repeated members (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
        const text = JSON.stringify(value);
        expect(parseStrictJson(text)).toEqual(JSON.parse(text));
      }),
      { numRuns: 300 },
    );
  });

  // Strings are scanned in runs of plain characters (issue 14); the characters that end a run
  // (quote, backslash, control characters, surrogates) must be judged one by one as before.
  it('reads raw string characters one by one: controls and lone surrogates refused (property)', () => {
    const isWellFormed = (text: string) => !/\p{Cs}/u.test(text);
    fc.assert(
      fc.property(
        fc.string({
          unit: fc.oneof(
            fc.constantFrom('\ud83d', '\ude00', '\u001f', 'a'),
            fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
          ),
          maxLength: 40,
        }),
        (raw) => {
          const body = raw.replace(/["\\]/g, '');
          const expected =
            // eslint-disable-next-line no-control-regex -- control characters are what it looks for
            /[\u0000-\u001f]/.test(body) || !isWellFormed(body) ? 'ERR_JSON_SYNTAX' : 'ok';
          expect(problem(`"${body}"`), JSON.stringify(body)).toBe(expected);
          if (expected === 'ok') expect(parseStrictJson(`["${body}", 1]`)).toEqual([body, 1]);
          // Escaped by JSON.stringify (well-formed: lone surrogates become \u escapes).
          expect(problem(JSON.stringify(raw))).toBe(isWellFormed(raw) ? 'ok' : 'ERR_JSON_SYNTAX');
          if (isWellFormed(raw)) expect(parseStrictJson(JSON.stringify(raw))).toBe(raw);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('on any text, returns a value or throws an ERR_JSON_* PackManifestError (property)', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'binary', maxLength: 200 }),
          fc.json().map((text) => text.slice(0, Math.max(0, text.length - 1))),
          fc.json().map((text) => text.replace(/"([a-z]+)":/, '"$1":1,"$1":')),
        ),
        (text) => {
          const code = problem(text);
          expect([
            'ok',
            'ERR_JSON_SYNTAX',
            'ERR_JSON_DUPLICATE_KEY',
            'ERR_JSON_TOO_DEEP',
          ]).toContain(code);
          if (code === 'ok') expect(() => JSON.parse(text)).not.toThrow();
        },
      ),
      { numRuns: 300 },
    );
  });
});
