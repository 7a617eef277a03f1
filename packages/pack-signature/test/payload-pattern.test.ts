import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toJSONSchema } from 'zod';
import { PackSignaturePayloadSchema } from '../src/index.js';

// payload.ts makes its `\p{…}` pattern only for text that is not printable ASCII (issue 14):
// the schema must judge `pack` and `packVersion` exactly as the pattern itself would.
const LITERAL = /^[^\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]+$/u;
const payload = (pack: string) => ({
  pack,
  packVersion: '1.0.0',
  digest: 'a'.repeat(64),
  iat: 1_780_000_000,
});
const accepted = (pack: string) => PackSignaturePayloadSchema.safeParse(payload(pack)).success;

// Printable ASCII, the ASCII controls, and characters on both sides of every excluded category.
const CHARACTERS = [
  ...Array.from({ length: 128 }, (_, code) => String.fromCharCode(code)),
  '\u0085', // C1 control (Cc)
  '\u00a0', // no-break space (Zs: allowed)
  '\u00ad', // soft hyphen (Cf)
  '\u00e9', // é (Ll)
  '\u061c', // Arabic letter mark (Cf)
  '\u200b', // zero-width space (Cf)
  '\u200d', // zero-width joiner (Cf)
  '\u2028', // line separator (Zl)
  '\u2029', // paragraph separator (Zp)
  '\u202e', // right-to-left override (Cf)
  '\u3000', // ideographic space (Zs: allowed)
  '\ufeff', // byte order mark (Cf)
  '\ud800', // lone high surrogate (Cs)
  '\udc00', // lone low surrogate (Cs)
  '\ud83d\ude00', // a pair: 😀 (So)
  '\u{e0001}', // language tag (Cf, astral)
];

describe('the payload pattern, made only for text that is not printable ASCII', () => {
  it('judges pack names as /^[^\\p{Cc}\\p{Cf}\\p{Cs}\\p{Zl}\\p{Zp}]+$/u does (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...CHARACTERS), { maxLength: 12 }), (parts) => {
        const text = parts.join('');
        if (text.length > 256) return;
        expect(accepted(text)).toBe(text.length > 0 && LITERAL.test(text));
      }),
      { numRuns: 3000 },
    );
  });

  it('refuses each excluded category, with or without printable ASCII around it', () => {
    for (const bad of ['\u0085', '\u00ad', '\u200b', '\u2028', '\u2029', '\u202e', '\ud800']) {
      expect(accepted(bad)).toBe(false);
      expect(accepted(`hello${bad}pack`)).toBe(false);
    }
    for (const good of ['hello-pack', 'hello pack', 'café', 'ünï\u00a0cödé', '😀']) {
      expect(accepted(good)).toBe(true);
    }
  });

  it('behaves as the literal pattern wherever a RegExp is used', () => {
    const check = PackSignaturePayloadSchema.shape.pack._zod.def.checks?.find(
      (c) => (c._zod.def as { format?: string }).format === 'regex',
    );
    const pattern = (check?._zod.def as { pattern?: RegExp } | undefined)?.pattern;
    expect(pattern).toBeInstanceOf(RegExp);
    for (const text of ['hello-pack', 'caf\u00e9', 'a\u202eb', '', 'a\nb', '\ud800']) {
      expect(pattern!.test(text)).toBe(LITERAL.test(text));
      expect(pattern!.exec(text)?.[0]).toBe(LITERAL.exec(text)?.[0]);
      expect(text.match(pattern!)?.[0]).toBe(text.match(LITERAL)?.[0]);
      expect(text.split(pattern!)).toEqual(text.split(LITERAL));
    }
    expect(String(pattern)).toBe(String(LITERAL));
    expect([pattern!.source, pattern!.flags, pattern!.unicode]).toEqual([
      LITERAL.source,
      'u',
      true,
    ]);
  });

  it('shows the same pattern in issues and JSON Schema as the literal', () => {
    const refused = PackSignaturePayloadSchema.safeParse(payload('a\u202eb'));
    expect(refused.success).toBe(false);
    expect(refused.error?.issues[0]).toMatchObject({
      code: 'invalid_format',
      format: 'regex',
      pattern: String(LITERAL),
      path: ['pack'],
      message: 'must not contain control or format characters',
    });
    const schema = toJSONSchema(PackSignaturePayloadSchema) as {
      properties: Record<string, { pattern?: string }>;
    };
    expect(schema.properties.pack?.pattern).toBe(LITERAL.source);
    expect(schema.properties.packVersion?.pattern).toBe(LITERAL.source);
  });
});
