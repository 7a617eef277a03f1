import { describe, expect, it } from 'vitest';
import { DeltaRedactor, MIN_SECRET_LENGTH, SecretSet, encodeFrame } from '../src/index.js';

describe('SecretSet', () => {
  it('scrubs plain text and serialised JSON, including escaped forms', () => {
    const secrets = new SecretSet();
    const token = 'sk-"quoted"\\slash\u2028';
    secrets.add(token);
    expect(secrets.scrubText(`a ${token} b ${token}`)).toBe('a [redacted] b [redacted]');
    const json = JSON.stringify({ text: `x${token}y`, [token]: [token] });
    expect(secrets.scrubJson(json)).toBe('{"text":"x[redacted]y","[redacted]":["[redacted]"]}');
    expect(encodeFrame({ t: token }, undefined, (j) => secrets.scrubJson(j))).toBe(
      '{"t":"[redacted]"}\n',
    );
  });

  it('ignores values too short to be secret material', () => {
    const secrets = new SecretSet();
    secrets.add('1');
    secrets.add('x'.repeat(MIN_SECRET_LENGTH - 1));
    expect(secrets.size).toBe(0);
    expect(secrets.scrubText('1 true')).toBe('1 true');
  });

  it('replaces a secret containing another one whole', () => {
    const secrets = new SecretSet();
    secrets.add('abcdef');
    secrets.add('abcdef-longer');
    expect(secrets.scrubText('abcdef-longer abcdef')).toBe('[redacted] [redacted]');
  });
});

describe('DeltaRedactor', () => {
  it('redacts a secret split over any number of deltas, releasing text that cannot be one', () => {
    const secrets = new SecretSet();
    const token = 'sk-live-123456';
    secrets.add(token);
    for (let size = 1; size <= token.length; size += 1) {
      const redactor = new DeltaRedactor(secrets);
      const stream = `before ${token} after sk-li`;
      let out = '';
      for (let i = 0; i < stream.length; i += size) out += redactor.push(stream.slice(i, i + size));
      out += redactor.flush();
      expect(out).toBe('before [redacted] after sk-li');
    }
  });

  it('holds nothing back when no secret is known', () => {
    const redactor = new DeltaRedactor(new SecretSet());
    expect(redactor.push('sk-')).toBe('sk-');
  });
});
