import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FrameDecoder, InputBudget, type DecodeError } from '../src/index.js';

const CAP = 48;

type Event = { frame: unknown } | { error: DecodeError };

/** Decodes `chunks` in order; records every event and the largest pending line seen. */
function decode(chunks: readonly Uint8Array[], maxFrameBytes = CAP) {
  const events: Event[] = [];
  let maxPending = 0;
  const decoder = new FrameDecoder({
    maxFrameBytes,
    onFrame: (frame) => events.push({ frame }),
    onError: (error) => events.push({ error }),
  });
  for (const chunk of chunks) {
    decoder.push(Buffer.from(chunk));
    maxPending = Math.max(maxPending, decoder.allocatedBytes);
  }
  decoder.end();
  return { events, maxPending };
}

function split(bytes: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const offsets = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let from = 0;
  for (const at of [...offsets, bytes.length]) {
    out.push(bytes.subarray(from, at));
    from = at;
  }
  return out;
}

/** A JSON object line of exactly `size` bytes. */
function objectOfSize(size: number): string {
  const base = '{"type":"x","p":""}';
  return `${base.slice(0, -2)}${'a'.repeat(size - base.length)}"}`;
}

// Lines around the cap (with and without \r), valid and broken JSON, blank lines, multibyte text.
const line = fc.oneof(
  fc.integer({ min: CAP - 2, max: CAP + 2 }).map(objectOfSize),
  fc.integer({ min: 19, max: CAP }).map(objectOfSize),
  fc.constantFrom('', '\r', '[1,2]', 'null', '{"type":"é✓😀"}', '{"a":', 'not json', '"s"'),
  fc.string({ maxLength: 60 }),
);
const ending = fc.constantFrom('\n', '\r\n', '\r\r\n', '');
const input = fc
  .array(fc.tuple(line, ending), { minLength: 1, maxLength: 8 })
  .map((lines) => new TextEncoder().encode(lines.map(([l, e]) => l + e).join('')));

describe('FrameDecoder: same verdict for any chunking (issue 16.8)', () => {
  it('regression: a frame of exactly the cap followed by \\r\\n is accepted in one chunk and when split', () => {
    const bytes = Buffer.from(`${objectOfSize(CAP)}\r\n`);
    const whole = decode([bytes]).events;
    expect(whole).toEqual([{ frame: JSON.parse(objectOfSize(CAP)) }]);
    for (let at = 0; at <= bytes.length; at += 1) {
      expect(decode([bytes.subarray(0, at), bytes.subarray(at)]).events).toEqual(whole);
    }
    // One byte more is refused either way, with the same report.
    const over = Buffer.from(`${objectOfSize(CAP + 1)}\r\n`);
    const refused = decode([over]).events;
    expect(refused).toEqual([
      { error: expect.objectContaining({ code: 'frame_too_large', bytes: CAP + 1 }) },
    ]);
    expect(decode([over.subarray(0, CAP + 1), over.subarray(CAP + 1)]).events).toEqual(refused);
  });

  it('property: events are identical for one chunk, byte-by-byte and random chunkings; memory stays bounded', () => {
    fc.assert(
      fc.property(input, fc.array(fc.nat(), { maxLength: 24 }), (bytes, cuts) => {
        const whole = decode([bytes]);
        const chunked = decode(split(bytes, cuts));
        const bytewise = decode(Array.from(bytes, (b) => Uint8Array.of(b)));
        expect(chunked.events).toEqual(whole.events);
        expect(bytewise.events).toEqual(whole.events);
        // The decoder never holds more than the cap plus the one byte that may be a \r.
        expect(chunked.maxPending).toBeLessThanOrEqual(CAP + 1);
        expect(bytewise.maxPending).toBeLessThanOrEqual(CAP + 1);
        for (const event of whole.events) {
          if ('error' in event) {
            expect([
              'invalid_json',
              'invalid_frame',
              'frame_too_large',
              'unterminated_frame',
            ]).toContain(event.error.code);
          }
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('FrameDecoder with a shared InputBudget (issue 9 W14)', () => {
  it('skips a partial frame that does not fit the shared budget, reports input_budget_exceeded, and releases memory', () => {
    const budget = new InputBudget(64 * 1024);
    const errors: string[] = [];
    const frames: unknown[] = [];
    const make = () =>
      new FrameDecoder({
        maxFrameBytes: 1024 * 1024,
        budget,
        onFrame: (frame) => frames.push(frame),
        onError: (error) => errors.push(error.code),
      });
    const first = make();
    const second = make();
    const line = `{"type":"x","p":"${'a'.repeat(40 * 1024)}"}`;
    first.push(line.slice(0, 100));
    expect(budget.used).toBe(64 * 1024);
    second.push(line.slice(0, 100));
    expect(second.allocatedBytes).toBe(0);
    expect(budget.used).toBe(64 * 1024);
    first.push(`${line.slice(100)}\n`);
    second.push(`${line.slice(100)}\n`);
    expect(frames).toHaveLength(1);
    expect(errors).toEqual(['input_budget_exceeded']);
    expect(budget.used).toBe(0);
    // With the memory back, the second connection is served again.
    second.push(line.slice(0, 100));
    second.push(`${line.slice(100)}\n`);
    expect(frames).toHaveLength(2);
    expect(budget.used).toBe(0);
  });
});
