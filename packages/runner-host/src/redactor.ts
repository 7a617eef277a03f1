/** Replaces a secret wherever it would leave the host. */
export const REDACTED = '[redacted]';

/**
 * Values shorter than this are not treated as secret material: redacting every "1" or "true"
 * of a `turnEnv` would corrupt output without protecting anything.
 */
export const MIN_SECRET_LENGTH = 6;

const MAX_SECRETS = 256;

/**
 * The secret values a host has seen (`modelToken`, `turnEnv` values, `gatewaySessionKey`), and
 * the scrubbing applied to every outgoing line. Most recent {@link MAX_SECRETS} values are kept.
 */
export class SecretSet {
  #values: string[] = [];
  #escaped: string[] = [];

  get size(): number {
    return this.#values.length;
  }

  add(value: string | undefined): void {
    if (value === undefined || value.length < MIN_SECRET_LENGTH) return;
    const at = this.#values.indexOf(value);
    if (at !== -1) {
      this.#values.splice(at, 1);
    } else if (this.#values.length >= MAX_SECRETS) {
      this.#values.shift();
    }
    this.#values.push(value);
    // Longest first, so a secret containing another is replaced whole.
    this.#values.sort((a, b) => b.length - a.length);
    this.#escaped = this.#values.map((v) => JSON.stringify(v).slice(1, -1));
  }

  /** Scrubs plain text. */
  scrubText(text: string): string {
    return replaceAll(text, this.#values);
  }

  /**
   * Scrubs a serialised JSON document. JSON.stringify escapes character by character, so a string
   * value containing a secret always contains the secret's escaped form.
   */
  scrubJson(json: string): string {
    return replaceAll(json, this.#escaped);
  }

  /** Length of the longest suffix of `text` that is a proper prefix of some secret. */
  heldSuffixLength(text: string): number {
    let held = 0;
    for (const secret of this.#values) {
      const first = secret.charCodeAt(0);
      const from = Math.max(0, text.length - secret.length + 1);
      for (let i = from; i < text.length; i += 1) {
        if (text.charCodeAt(i) !== first) continue;
        if (text.length - i <= held) break;
        if (secret.startsWith(text.slice(i))) {
          held = text.length - i;
          break;
        }
      }
    }
    return held;
  }
}

function replaceAll(text: string, needles: readonly string[]): string {
  let out = text;
  for (const needle of needles) {
    if (out.includes(needle)) out = out.split(needle).join(REDACTED);
  }
  return out;
}

/**
 * Redacts a stream of text deltas where a secret may be split across deltas: it holds back the
 * shortest tail that could still become a secret and releases it once it cannot.
 */
export class DeltaRedactor {
  readonly #secrets: SecretSet;
  #held = '';

  constructor(secrets: SecretSet) {
    this.#secrets = secrets;
  }

  /** Returns the text that is safe to send now (possibly empty). */
  push(delta: string): string {
    if (this.#secrets.size === 0) {
      const out = this.#held + delta;
      this.#held = '';
      return out;
    }
    const text = this.#secrets.scrubText(this.#held + delta);
    const hold = this.#secrets.heldSuffixLength(text);
    this.#held = hold > 0 ? text.slice(text.length - hold) : '';
    return hold > 0 ? text.slice(0, text.length - hold) : text;
  }

  /** Releases whatever is held: the stream ended without completing a secret. */
  flush(): string {
    const out = this.#held;
    this.#held = '';
    return out;
  }
}
