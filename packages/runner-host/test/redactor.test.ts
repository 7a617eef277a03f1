import { describe, expect, it } from 'vitest';
import {
  DeltaRedactor,
  MIN_SECRET_LENGTH,
  REDACTED,
  SecretSet,
  encodeFrame,
} from '../src/index.js';

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

describe('SecretSet: a scrubbed document keeps its shape', () => {
  /** Every string in a parsed document, keys included. */
  const stringsOf = (value: unknown): string[] =>
    typeof value === 'string'
      ? [value]
      : Array.isArray(value)
        ? value.flatMap(stringsOf)
        : value !== null && typeof value === 'object'
          ? Object.entries(value).flatMap(([key, inner]) => [key, ...stringsOf(inner)])
          : [];

  it('never changes a number, even one that spells a secret (it made the line invalid JSON)', () => {
    const secrets = new SecretSet();
    secrets.add('100000');
    secrets.add('1,2,3,4');
    const json = JSON.stringify({
      usage: { inputTokens: 1000000 },
      ids: [1, 2, 3, 4],
      n: '100000',
    });
    const out = secrets.scrubJson(json);
    expect(JSON.parse(out)).toEqual({
      usage: { inputTokens: 1000000 },
      ids: [1, 2, 3, 4],
      n: REDACTED,
    });
  });

  it('replaces secrets only inside strings, for random documents and secrets', () => {
    // A seeded generator: the same cases on every run.
    let state = 0x2545f491;
    const next = (below: number) => {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      return (state >>> 0) % below;
    };
    const alphabet = [
      'a',
      'b',
      '1',
      '0',
      '"',
      '\\',
      '\n',
      ',',
      ':',
      '[',
      '{',
      'e',
      '-',
      '.',
      '\u2028',
    ];
    const word = (length: number) =>
      Array.from({ length }, () => alphabet[next(alphabet.length)]).join('');
    const value = (depth: number): unknown => {
      const kind = next(depth > 2 ? 3 : 5);
      if (kind === 0) return word(next(12));
      if (kind === 1) return next(2_000_000) - 1_000_000;
      if (kind === 2) return [true, false, null][next(3)];
      if (kind === 3) return Array.from({ length: next(4) }, () => value(depth + 1));
      return Object.fromEntries(
        Array.from({ length: next(4) }, () => [word(next(8)), value(depth + 1)]),
      );
    };
    for (let round = 0; round < 400; round += 1) {
      const secrets = new SecretSet();
      const secretList = Array.from({ length: 1 + next(3) }, () => word(6 + next(4)));
      for (const secret of secretList) secrets.add(secret);
      const document = value(0);
      const json = JSON.stringify(document);
      for (const out of [secrets.scrubJson(json), secrets.scrubFrame(json)]) {
        const parsed: unknown = JSON.parse(out);
        if (typeof document !== 'object' || document === null) continue;
        expect(typeof parsed).toBe(typeof document);
        expect(Array.isArray(parsed)).toBe(Array.isArray(document));
      }
      const scrubbed = stringsOf(JSON.parse(secrets.scrubJson(json)));
      for (const secret of secretList)
        for (const text of scrubbed) expect(text.includes(secret)).toBe(false);
    }
  });

  it('leaves the words of a frame to the protocol: a secret that is one breaks no frame', () => {
    const secrets = new SecretSet();
    for (const value of [
      'result',
      'warning',
      'cancelled',
      'message',
      'run-7-abcdef',
      'my-engine',
      'sk-live-1234',
    ])
      secrets.add(value);
    const frames = [
      { type: 'accepted', runId: 'r', seq: 1, engineId: 'my-engine' },
      { type: 'result', runId: 'run-7-abcdef', seq: 3, stopReason: 'cancelled' },
      {
        type: 'warning',
        runId: 'r',
        seq: 1,
        code: 'sk-live-1234',
        message: 'a warning sk-live-1234',
      },
      {
        type: 'failed',
        runId: 'r',
        seq: 2,
        error: { code: 'x', message: 'message', retryable: false },
      },
      { type: 'log', level: 'warn', message: 'result: sk-live-1234' },
      {
        type: 'tool_end',
        runId: 'r',
        seq: 4,
        toolCallId: 'sk-live-1234',
        name: 'result',
        output: { 'sk-live-1234': ['message'], plain: 'result' },
      },
    ];
    expect(frames.map((frame) => JSON.parse(secrets.scrubFrame(JSON.stringify(frame))))).toEqual([
      { type: 'accepted', runId: 'r', seq: 1, engineId: 'my-engine' },
      { type: 'result', runId: 'run-7-abcdef', seq: 3, stopReason: 'cancelled' },
      { type: 'warning', runId: 'r', seq: 1, code: REDACTED, message: `a ${REDACTED} ${REDACTED}` },
      {
        type: 'failed',
        runId: 'r',
        seq: 2,
        error: { code: 'x', message: REDACTED, retryable: false },
      },
      { type: 'log', level: 'warn', message: `${REDACTED}: ${REDACTED}` },
      {
        type: 'tool_end',
        runId: 'r',
        seq: 4,
        toolCallId: REDACTED,
        name: REDACTED,
        output: { [REDACTED]: [REDACTED], plain: REDACTED },
      },
    ]);
  });

  it('scrubs text that is not JSON everywhere', () => {
    const secrets = new SecretSet();
    secrets.add('sk-live-1234');
    for (const broken of [
      '{"a":"sk-live-1234"',
      '"sk-live-1234',
      '{"a":1]sk-live-1234',
      '{"a":1,b:sk-live-1234}',
      'sk-live-1234',
      '[true,sk-live-1234]',
    ]) {
      expect(secrets.scrubFrame(broken)).not.toContain('sk-live-1234');
      expect(secrets.scrubJson(broken)).not.toContain('sk-live-1234');
    }
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
