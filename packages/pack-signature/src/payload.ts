// A namespace import, not the `z` object: bundlers keep only what is used (see pack-manifest).
import * as z from 'zod';
import { FILE_LIST_MAX_ENTRIES, PACK_SIGNATURE_IAT_RANGE } from './constants.js';

// Control and format characters (bidi overrides included), lone surrogates and line breaks:
// these strings are shown to operators in refusals and must read as what they are.
const NO_CONTROL_SOURCE = String.raw`^[^\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]+$`;
// Printable ASCII, space included: text that NO_CONTROL_SOURCE matches.
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/**
 * `new RegExp(NO_CONTROL_SOURCE, 'u')`, made when first needed. V8 builds the Unicode sets of
 * `\p{…}` classes when it makes a pattern: ~2 M instructions of every CLI start-up that loads
 * this module (issue 14), where a printable-ASCII name or version needs none of them. `test`
 * answers true for such text at once and asks the pattern otherwise; everything else a RegExp
 * offers (`exec`, `source`, `flags`, `toString`, which zod's issues and JSON Schema show) is the
 * pattern's own.
 */
class NoControlPattern extends RegExp {
  #pattern: RegExp | undefined;
  constructor() {
    super(PRINTABLE_ASCII.source);
  }
  #full(): RegExp {
    return (this.#pattern ??= new RegExp(NO_CONTROL_SOURCE, 'u'));
  }
  override get source(): string {
    return NO_CONTROL_SOURCE;
  }
  override get flags(): string {
    return 'u';
  }
  override get unicode(): boolean {
    return true;
  }
  override exec(text: string): RegExpExecArray | null {
    return this.#full().exec(text);
  }
  override test(text: string): boolean {
    return PRINTABLE_ASCII.test(text) || this.#full().test(text);
  }
  // `split` copies a pattern from its internal source, not from `source` (`matchAll` refuses a
  // pattern without the g flag, as it refuses the literal).
  override [Symbol.split](text: string, limit?: number): string[] {
    return this.#full()[Symbol.split](text, limit);
  }
}
const NO_CONTROL: RegExp = new NoControlPattern();

/**
 * The signed payload of `pack.sig` v1, checked only after its signature verified. Strict: an
 * unknown member is refused, so nothing signed is silently ignored.
 */
export const PackSignaturePayloadSchema = z.strictObject({
  pack: z
    .string()
    .min(1)
    .max(256)
    .regex(NO_CONTROL, 'must not contain control or format characters'),
  packVersion: z
    .string()
    .min(1)
    .max(256)
    .regex(NO_CONTROL, 'must not contain control or format characters'),
  digest: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex characters'),
  iat: z
    .number()
    .int()
    .min(PACK_SIGNATURE_IAT_RANGE.min, 'is before 2000-01-01')
    .max(PACK_SIGNATURE_IAT_RANGE.max, 'is after 2100-01-01'),
  digestAlg: z.string().min(1).max(64).optional(),
  files: z.array(z.string().max(8192)).max(FILE_LIST_MAX_ENTRIES).optional(),
});

/** The payload of a `pack.sig`: `digestAlg` and `files` come from packwarden signers only. */
export interface PackSignaturePayload {
  pack: string;
  packVersion: string;
  digest: string;
  /** Seconds since the epoch. */
  iat: number;
  digestAlg?: string;
  files?: string[];
}

/** A human sentence for the first few schema issues. */
export function describePayloadIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => {
      const where = issue.path.length === 0 ? 'payload' : issue.path.join('.');
      return `${where}: ${issue.message}`;
    })
    .join('; ');
}
