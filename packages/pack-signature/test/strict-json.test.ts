import { describe, expect, it } from 'vitest';
import { parseStrictJson, StrictJsonError, type StrictJsonProblem } from '../src/strict-json.js';

function problem(text: string): StrictJsonProblem | 'ok' {
  try {
    parseStrictJson(text);
    return 'ok';
  } catch (error) {
    expect(error).toBeInstanceOf(StrictJsonError);
    return (error as StrictJsonError).problem;
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
    expect(problem('{"a":1,"a":2}')).toBe('duplicate-key');
    expect(problem('{"a":1,"\\u0061":2}')).toBe('duplicate-key');
    expect(problem('{"x":{"a":1,"a":1}}')).toBe('duplicate-key');
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
      expect(problem(text), text).toBe('syntax');
    }
  });

  it('refuses escaped lone surrogates, which JSON.parse lets through', () => {
    for (const text of ['"\\ud800"', '"\\udc00"', '"\\ud800\\u0041"', '"\\ud800x"']) {
      expect(() => JSON.parse(text)).not.toThrow();
      expect(problem(text)).toBe('syntax');
    }
  });

  it('bounds nesting depth', () => {
    expect(problem(`${'['.repeat(32)}${']'.repeat(32)}`)).toBe('ok');
    expect(problem(`${'['.repeat(33)}${']'.repeat(33)}`)).toBe('too-deep');
    expect(problem(`${'{"a":'.repeat(100000)}1${'}'.repeat(100000)}`)).toBe('too-deep');
  });

  it('keeps "__proto__" as a plain key', () => {
    const value = parseStrictJson('{"__proto__":{"polluted":true}}') as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
  });
});
