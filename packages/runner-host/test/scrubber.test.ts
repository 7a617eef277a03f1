import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  REDACTED,
  ScrubbedTail,
  SecretSet,
  StreamScrubber,
  TAIL_ELLIPSIS,
  encodeFrame,
} from '../src/index.js';

// The token uses only upper-case letters and digits; the noise around it never does. So any
// upper-case letter or digit in the output is a piece of the token.
const TOKEN = 'SKLIVE0123456789ABCDEFXYZ';
const TOKEN_CHARS = /[A-Z0-9]/;
const noise = fc.string({
  unit: fc.constantFrom(...'abc xyz-\n'.split(''), 'é', '€', '😀'),
  maxLength: 40,
});

/** Cuts `bytes` into chunks at the given (sorted, deduplicated) offsets. */
function chunk(bytes: Buffer, cuts: number[]): Buffer[] {
  const offsets = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const at of [...offsets, bytes.length]) {
    out.push(bytes.subarray(from, at));
    from = at;
  }
  return out;
}

const streams = fc
  .array(fc.tuple(noise, fc.boolean()), { minLength: 1, maxLength: 6 })
  .map((parts) => parts.map(([text, token]) => (token ? `${text}${TOKEN}` : text)).join(''));

describe('StreamScrubber (issue 9 W2)', () => {
  it('regression: a token written to stderr in two pieces is scrubbed whole', () => {
    const secrets = new SecretSet();
    secrets.add(TOKEN);
    const scrubber = new StreamScrubber(secrets);
    const out =
      scrubber.write('Error: auth failed for SKLIVE0123') +
      scrubber.write('456789ABCDEFXYZ (401)\n') +
      scrubber.flush();
    expect(out).toBe(`Error: auth failed for ${REDACTED} (401)\n`);
  });

  it('property: any chunking of the bytes gives the scrubbed text, and the token never passes', () => {
    fc.assert(
      fc.property(streams, fc.array(fc.nat(), { maxLength: 20 }), (text, cuts) => {
        const secrets = new SecretSet();
        secrets.add(TOKEN);
        const scrubber = new StreamScrubber(secrets);
        let out = '';
        for (const piece of chunk(Buffer.from(text), cuts)) {
          const safe = scrubber.write(piece);
          // What is released at any moment never ends in a piece that completes later.
          expect(safe).not.toMatch(TOKEN_CHARS);
          out += safe;
          expect(scrubber.heldLength).toBeLessThan(TOKEN.length);
        }
        out += scrubber.flush();
        expect(out).toBe(text.split(TOKEN).join(REDACTED));
      }),
      { numRuns: 300 },
    );
  });
});

describe('ScrubbedTail (issue 9 W3)', () => {
  it('regression: a tail cut inside the token carries none of its characters', () => {
    const secrets = new SecretSet();
    secrets.add(TOKEN);
    const tail = new ScrubbedTail(secrets, 16);
    // 40 bytes of noise, then the token in two writes, then 5 bytes: a raw 16-byte tail would
    // start at the token's last 11 characters.
    tail.push('x'.repeat(40) + TOKEN.slice(0, 10));
    tail.push(`${TOKEN.slice(10)} done`);
    expect(tail.text()).toBe(`${TAIL_ELLIPSIS}x${REDACTED} done`);
  });

  it('property: never a token character, at most maxBytes of whole characters, same for any chunking', () => {
    fc.assert(
      fc.property(
        streams,
        fc.array(fc.nat(), { maxLength: 20 }),
        fc.integer({ min: 0, max: 64 }),
        (text, cuts, maxBytes) => {
          const secrets = new SecretSet();
          secrets.add(TOKEN);
          const chunked = new ScrubbedTail(secrets, maxBytes);
          for (const piece of chunk(Buffer.from(text), cuts)) chunked.push(piece);
          const whole = new ScrubbedTail(secrets, maxBytes);
          whole.push(text);
          const out = chunked.text();
          expect(out).toBe(whole.text());
          expect(out).not.toMatch(TOKEN_CHARS);
          const body = out.startsWith(TAIL_ELLIPSIS) ? out.slice(TAIL_ELLIPSIS.length) : out;
          expect(Buffer.byteLength(body)).toBeLessThanOrEqual(maxBytes);
          expect(body).not.toContain('\uFFFD');
          // A tail is the end of the scrubbed stream, never the middle of a marker.
          const scrubbed = text.split(TOKEN).join(REDACTED);
          expect(scrubbed.endsWith(body)).toBe(true);
          // (The noise has no "]", so a proper suffix of the marker can only be a cut marker.)
          for (let k = 1; k < REDACTED.length; k += 1) {
            expect(body.startsWith(REDACTED.slice(k))).toBe(false);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a secret learned after the bytes were written is still scrubbed when the tail is read', () => {
    const secrets = new SecretSet();
    const tail = new ScrubbedTail(secrets, 1024);
    tail.push(`early ${TOKEN} line`);
    secrets.add(TOKEN);
    expect(tail.text()).toBe(`early ${REDACTED} line`);
    expect(encodeFrame({ m: tail.text() })).not.toContain(TOKEN);
  });

  it('rejects a negative or fractional maxBytes with ERR_INVALID_OPTIONS', () => {
    expect(() => new ScrubbedTail(new SecretSet(), -1)).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTIONS' }),
    );
    expect(() => new ScrubbedTail(new SecretSet(), 1.5)).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTIONS' }),
    );
  });
});

describe('SecretSet scrubbing edge cases', () => {
  it('a secret overlapping the marker cannot reappear after replacement', () => {
    const secrets = new SecretSet();
    const tricky = 'ab[redacted]';
    secrets.add(tricky);
    const out = secrets.scrubText(`abab[redacted]`);
    expect(out).not.toContain(tricky);
  });

  it('does not corrupt a JSON escape that happens to end with the secret', () => {
    const secrets = new SecretSet();
    secrets.add('nabcdef');
    const json = JSON.stringify({ t: 'line\nabcdef' });
    const scrubbed = secrets.scrubJson(json);
    expect(JSON.parse(scrubbed)).toEqual({ t: 'line\nabcdef' });
    expect(JSON.parse(secrets.scrubJson(JSON.stringify({ t: 'x nabcdef' })))).toEqual({
      t: `x ${REDACTED}`,
    });
  });
});
