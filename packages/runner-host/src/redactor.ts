import { StringDecoder } from 'node:string_decoder';
import { RunnerHostError } from './errors.js';
import { runSecretValues, type RunSecretFields } from './run-secrets.js';

/** Replaces a secret wherever it would leave the host. */
export const REDACTED = '[redacted]';

/**
 * Values shorter than this are not treated as secret material: redacting every "1" or "true"
 * of a `turnEnv` would corrupt output without protecting anything.
 */
export const MIN_SECRET_LENGTH = 6;

/**
 * Secret-bearing values one `run` frame may carry (`modelToken`, `gatewaySessionKey` and every
 * `turnEnv` value together). A frame with more is refused (`too_many_secrets`, see the README's
 * "Secrets"): this is what keeps the pinned secrets of live runs bounded.
 */
export const MAX_RUN_SECRETS = 64;

/**
 * Secrets of runs that have ended (or that were added with {@link SecretSet.add}) that are still
 * remembered, most recent first. Secrets pinned by a live run are never evicted and do not count.
 */
export const MAX_REMEMBERED_SECRETS = 256;

/** Scrub passes that replace with the marker before the fail-closed deletion pass takes over. */
const MARKER_PASSES = 4;

/**
 * The secret values a host has seen (`modelToken`, `turnEnv` values, `gatewaySessionKey`), and
 * the scrubbing applied to every outgoing line.
 *
 * Two kinds of membership (README "Secrets"): values **pinned** by a live run with
 * {@link SecretSet.pin} stay until that run releases them, whatever else is added; values
 * **remembered** ({@link SecretSet.add}, and pins once released) are kept up to
 * {@link MAX_REMEMBERED_SECRETS}, the oldest evicted first.
 */
export class SecretSet {
  /** value → number of live pins holding it. */
  readonly #pinned = new Map<string, number>();
  /** Insertion-ordered: the first entry is the oldest. */
  readonly #remembered = new Set<string>();
  #values: string[] = [];
  #escaped: string[] = [];
  #dirty = false;

  /** Distinct secrets currently scrubbed (pinned and remembered). */
  get size(): number {
    this.#refresh();
    return this.#values.length;
  }

  /** The longest secret's length (0 when there is none): how far back a split secret can reach. */
  get longest(): number {
    this.#refresh();
    return this.#values[0]?.length ?? 0;
  }

  /** Remembers a value (bounded; the oldest remembered value is evicted first). */
  add(value: string | undefined): void {
    if (!isSecretMaterial(value)) return;
    this.#remember(value);
    this.#dirty = true;
  }

  /**
   * Remembers every secret value of a run ({@link runSecretValues}: `modelToken`,
   * `gatewaySessionKey` and each `turnEnv` value), as an engine or embedder does that scrubs its
   * own channels with the run's secrets (README "Secrets").
   */
  addRun(run: RunSecretFields): void {
    for (const value of runSecretValues(run)) this.add(value);
  }

  /**
   * Pins the secrets of a live run: they are scrubbed until the returned function is called,
   * and no number of later {@link SecretSet.add} or pins can evict them. Releasing moves them to
   * the remembered values (their output may still be in flight). Throws `ERR_TOO_MANY_SECRETS`
   * (nothing pinned) for more than {@link MAX_RUN_SECRETS} values of secret length.
   */
  pin(values: Iterable<string | undefined>): () => void {
    const unique = new Set<string>();
    for (const value of values) if (isSecretMaterial(value)) unique.add(value);
    if (unique.size > MAX_RUN_SECRETS) {
      throw new RunnerHostError(
        'ERR_TOO_MANY_SECRETS',
        `${unique.size} secret values in one run, over the limit of ${MAX_RUN_SECRETS}`,
      );
    }
    for (const value of unique) this.#pinned.set(value, (this.#pinned.get(value) ?? 0) + 1);
    this.#dirty = true;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const value of unique) {
        const count = (this.#pinned.get(value) ?? 1) - 1;
        if (count > 0) this.#pinned.set(value, count);
        else this.#pinned.delete(value);
        this.#remember(value);
      }
      this.#dirty = true;
    };
  }

  /** Scrubs plain text. */
  scrubText(text: string): string {
    this.#refresh();
    return scrub(text, this.#values, false);
  }

  /**
   * Scrubs a serialised JSON document: the secrets inside its strings, keys and values, and
   * nothing else, so that a valid document stays valid and keeps its shape. JSON.stringify
   * escapes character by character, so a string containing a secret always contains the secret's
   * escaped form, starting on an escape boundary (never right after an odd run of backslashes,
   * where it would be the tail of `\n`, `\u00XX` …, and replacing it would corrupt the string).
   *
   * Numbers, `true`, `false`, `null` and punctuation are never changed: replacing digits inside
   * a number (a secret `100000` in a count of `1000000`) made the document invalid. A secret made
   * only of such characters can therefore still appear there. Text that is not JSON is scrubbed
   * everywhere, as plain text is.
   */
  scrubJson(json: string): string {
    this.#refresh();
    return scrubJsonStrings(json, this.#escaped, keepNothing);
  }

  /**
   * Scrubs one serialised frame (README "Secrets"): as {@link SecretSet.scrubJson}, except that
   * what the protocol itself says is left as it is: the keys of the frame and of its parts, and
   * the values of `type`, `runId`, `engineId`, `stopReason`, `level`, `outcome`, `questionId` and
   * `id`. A secret that is also a protocol word (a `turnEnv` value `warning` or `result`) made
   * `"type":"[redacted]"`, a frame no driver can read. Every other string is scrubbed, keys
   * included, inside a tool's `input` and `output`.
   */
  scrubFrame(json: string): string {
    this.#refresh();
    return scrubJsonStrings(json, this.#escaped, keepProtocolWords);
  }

  /** Length of the longest suffix of `text` that is a proper prefix of some secret. */
  heldSuffixLength(text: string): number {
    this.#refresh();
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

  #remember(value: string): void {
    this.#remembered.delete(value);
    this.#remembered.add(value);
    while (this.#remembered.size > MAX_REMEMBERED_SECRETS) {
      const oldest = this.#remembered.values().next().value as string;
      this.#remembered.delete(oldest);
    }
  }

  #refresh(): void {
    if (!this.#dirty) return;
    this.#dirty = false;
    const all = new Set([...this.#pinned.keys(), ...this.#remembered]);
    // Longest first, so a secret containing another is replaced whole.
    this.#values = [...all].sort((a, b) => b.length - a.length);
    this.#escaped = this.#values.map((v) => JSON.stringify(v).slice(1, -1));
  }
}

function isSecretMaterial(value: string | undefined): value is string {
  return typeof value === 'string' && value.length >= MIN_SECRET_LENGTH;
}

function precededByOddBackslashes(text: string, at: number): boolean {
  let count = 0;
  for (let i = at - 1; i >= 0 && text.charCodeAt(i) === 0x5c; i -= 1) count += 1;
  return count % 2 === 1;
}

function replaceNeedle(text: string, needle: string, by: string, json: boolean): string {
  let at = text.indexOf(needle);
  if (at === -1) return text;
  let out = '';
  let from = 0;
  while (at !== -1) {
    if (json && precededByOddBackslashes(text, at)) {
      at = text.indexOf(needle, at + 1);
      continue;
    }
    out += text.slice(from, at) + by;
    from = at + needle.length;
    at = text.indexOf(needle, from);
  }
  return out + text.slice(from);
}

function containsNeedle(text: string, needles: readonly string[], json: boolean): boolean {
  for (const needle of needles) {
    let at = text.indexOf(needle);
    while (at !== -1) {
      if (!json || !precededByOddBackslashes(text, at)) return true;
      at = text.indexOf(needle, at + 1);
    }
  }
  return false;
}

/**
 * Replaces every secret with the marker. Replacing can make a new occurrence appear (a secret
 * that overlaps the marker text): the check repeats, and if that keeps happening the remaining
 * occurrences are deleted, which strictly shortens the text and so ends. Never returns text
 * containing a secret.
 */
function scrub(text: string, needles: readonly string[], json: boolean): string {
  if (needles.length === 0) return text;
  let out = text;
  for (let pass = 0; pass < MARKER_PASSES; pass += 1) {
    if (!containsNeedle(out, needles, json)) return out;
    for (const needle of needles) out = replaceNeedle(out, needle, REDACTED, json);
  }
  while (containsNeedle(out, needles, json)) {
    for (const needle of needles) out = replaceNeedle(out, needle, '', json);
  }
  return out;
}

/** Where a string sits in a JSON document, for the rule that may keep it as it is. */
interface StringPlace {
  /** Containers around it: 1 for a member of the top-level object. */
  depth: number;
  /** A key, not a value. */
  isKey: boolean;
  /** The key of the top-level member it is in (its own key, for a top-level member's value). */
  member: string | undefined;
}

type KeepRule = (place: StringPlace) => boolean;

const keepNothing: KeepRule = () => false;

/**
 * Top-level members of a frame whose values are protocol words or identifiers the driver or the
 * host chose (frames.ts): `runId` and `id` are the driver's, `questionId` the host's, `engineId`
 * one the welcome already listed. What an engine chooses (`toolCallId`, `nativeSessionId`, codes,
 * names) is scrubbed.
 */
const PROTOCOL_VALUE_MEMBERS = new Set([
  'type',
  'runId',
  'engineId',
  'stopReason',
  'level',
  'outcome',
  'questionId',
  'id',
]);
/** Top-level members of a frame that hold an engine's own JSON: its keys are scrubbed too. */
const ENGINE_JSON_MEMBERS = new Set(['input', 'output']);

const keepProtocolWords: KeepRule = ({ depth, isKey, member }) => {
  if (depth === 1) return isKey || PROTOCOL_VALUE_MEMBERS.has(member ?? '');
  return isKey && !ENGINE_JSON_MEMBERS.has(member ?? '');
};

/** What JSON may hold outside strings: numbers, `true`, `false`, `null`, `:` and whitespace. */
const OUTSIDE_STRINGS = /^[-+.0-9eE:\s truefalsn]$/;

/** Index of the quote that closes the string opening at `open`, or -1 when there is none. */
function closingQuote(json: string, open: number): number {
  for (let i = open + 1; i < json.length; i += 1) {
    const unit = json.charCodeAt(i);
    if (unit === 0x5c) i += 1;
    else if (unit === 0x22) return i;
  }
  return -1;
}

/**
 * Scrubs the contents of the strings of a JSON document (those `keep` does not keep) and copies
 * everything else. A document it cannot follow (unbalanced, an unterminated string, a character
 * JSON never has outside strings) is scrubbed everywhere: never less.
 */
function scrubJsonStrings(json: string, needles: readonly string[], keep: KeepRule): string {
  // Most lines hold no secret at all: find that out with indexOf before reading the structure,
  // and look in each string only for the secrets the line holds somewhere.
  const present = needles.filter((needle) => containsNeedle(json, [needle], true));
  if (present.length === 0) return json;
  needles = present;
  // Per open container: whether it is an object, and whether its next string is a key.
  const objects: boolean[] = [];
  const expectKey: boolean[] = [];
  let member: string | undefined;
  let out = '';
  let copied = 0;
  for (let i = 0; i < json.length; i += 1) {
    const unit = json.charCodeAt(i);
    if (unit === 0x7b || unit === 0x5b) {
      objects.push(unit === 0x7b);
      expectKey.push(unit === 0x7b);
    } else if (unit === 0x7d || unit === 0x5d) {
      if (objects.pop() !== (unit === 0x7d)) return scrub(json, needles, true);
      expectKey.pop();
      if (objects.length === 1) member = undefined;
    } else if (unit === 0x2c) {
      const top = objects.length - 1;
      if (top >= 0) expectKey[top] = objects[top]!;
    } else if (unit !== 0x22 && !OUTSIDE_STRINGS.test(json[i]!)) {
      // Not JSON (a bare word, say): what it says outside strings is text too.
      return scrub(json, needles, true);
    } else if (unit === 0x22) {
      const close = closingQuote(json, i);
      if (close === -1) return scrub(json, needles, true);
      const top = objects.length - 1;
      const isKey = top >= 0 && expectKey[top] === true;
      if (isKey) expectKey[top] = false;
      if (isKey && objects.length === 1) member = json.slice(i + 1, close);
      if (!keep({ depth: objects.length, isKey, member })) {
        out += json.slice(copied, i + 1) + scrub(json.slice(i + 1, close), needles, true);
        copied = close;
      }
      i = close;
    }
  }
  if (objects.length !== 0) return scrub(json, needles, true);
  return copied === 0 ? json : out + json.slice(copied);
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

  /** Text held back because it could still become a secret. */
  get held(): string {
    return this.#held;
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

  /**
   * Releases whatever is held: the stream ended without completing a secret. Scrubbed again, as
   * a secret learned since it was held may now be complete in it.
   */
  flush(): string {
    const out = this.#held;
    this.#held = '';
    return out === '' ? out : this.#secrets.scrubText(out);
  }
}

/**
 * The one streaming scrubber for byte or text streams that leave the host piecewise (a child's
 * stderr, a log channel): a secret written in any number of pieces is replaced whole, because
 * the window it scrubs spans writes. Bytes are decoded as UTF-8 across writes (a character split
 * between two writes is joined first). See the README's "Scrubbing streams".
 */
export class StreamScrubber {
  readonly #redactor: DeltaRedactor;
  readonly #decoder = new StringDecoder('utf8');

  constructor(secrets: SecretSet) {
    this.#redactor = new DeltaRedactor(secrets);
  }

  /** Text held back because it could still become a secret (never more than the longest secret). */
  get heldLength(): number {
    return this.#redactor.held.length;
  }

  /** Scrubs one write; returns the text that is safe to pass on now (possibly empty). */
  write(chunk: string | Uint8Array): string {
    const text = typeof chunk === 'string' ? chunk : this.#decoder.write(chunk);
    return text === '' ? '' : this.#redactor.push(text);
  }

  /**
   * Releases what is held. Call at the end of the stream, or when a pause is long enough that
   * holding a possible secret prefix any longer would hide real output (the held text is then
   * released as is: it did not become a secret).
   */
  flush(): string {
    const rest = this.#decoder.end();
    const safe = rest === '' ? '' : this.#redactor.push(rest);
    return safe + this.#redactor.flush();
  }
}

/** Marks the start of a {@link ScrubbedTail} that dropped earlier output. */
export const TAIL_ELLIPSIS = '…';

/**
 * The last `maxBytes` bytes (UTF-8) of a stream, scrubbed **before** it is cut: the window is
 * cut only in scrubbed text (and never inside a `[redacted]` marker or a character), so a tail
 * can never start with the last characters of a secret whose beginning was dropped.
 */
export class ScrubbedTail {
  readonly #secrets: SecretSet;
  readonly #scrubber: StreamScrubber;
  readonly #maxBytes: number;
  #text = '';
  #dropped = false;

  constructor(secrets: SecretSet, maxBytes: number) {
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
      throw new RunnerHostError(
        'ERR_INVALID_OPTIONS',
        'maxBytes must be a non-negative whole number',
      );
    }
    this.#secrets = secrets;
    this.#scrubber = new StreamScrubber(secrets);
    this.#maxBytes = maxBytes;
  }

  /** Whether earlier output was dropped to keep the tail within `maxBytes`. */
  get truncated(): boolean {
    return this.#dropped;
  }

  push(chunk: string | Uint8Array): void {
    const safe = this.#scrubber.write(chunk);
    if (safe === '') return;
    this.#text += safe;
    // Cut only once the text is well over the cap, so the cost stays linear in the input.
    if (this.#text.length > 2 * this.#maxBytes + 64) this.#cut();
  }

  /**
   * The tail as text, prefixed with {@link TAIL_ELLIPSIS} when earlier output was dropped. Ends
   * the stream: what was held back as a possible secret prefix is released (scrubbed again).
   */
  text(): string {
    this.#text += this.#scrubber.flush();
    this.#text = this.#secrets.scrubText(this.#text);
    this.#cut();
    return this.#dropped ? `${TAIL_ELLIPSIS}${this.#text}` : this.#text;
  }

  #cut(): void {
    if (Buffer.byteLength(this.#text) <= this.#maxBytes) return;
    this.#dropped = true;
    // Walk back from the end counting UTF-8 bytes, so the cut falls between characters.
    let bytes = 0;
    let start = this.#text.length;
    while (start > 0) {
      const unit = this.#text.charCodeAt(start - 1);
      const pair =
        unit >= 0xdc00 &&
        unit <= 0xdfff &&
        start >= 2 &&
        this.#text.charCodeAt(start - 2) >= 0xd800 &&
        this.#text.charCodeAt(start - 2) <= 0xdbff;
      // A lone surrogate is written as U+FFFD (3 bytes).
      const width = pair ? 4 : unit > 0x7ff ? 3 : unit > 0x7f ? 2 : 1;
      if (bytes + width > this.#maxBytes) break;
      bytes += width;
      start -= pair ? 2 : 1;
    }
    // Never start inside a marker: "acted]" would read like output.
    const marker = this.#text.lastIndexOf(REDACTED, start);
    if (marker !== -1 && marker < start && start < marker + REDACTED.length) {
      start = marker + REDACTED.length;
    }
    this.#text = this.#text.slice(start);
  }
}
