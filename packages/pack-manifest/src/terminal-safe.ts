export interface TerminalSafeOptions {
  /**
   * Keep line feeds and tabs: for free text printed as a block of its own (engine output, a
   * multi-line error). Off for anything inside a line or a table cell, where a line feed would
   * let the text forge the next line (a fake `verified` row, a fake prompt).
   */
  multiline?: boolean;
}

// C0 controls (ESC starts every CSI/OSC sequence: screen clears, cursor moves, OSC 52 clipboard
// writes, OSC 8 links), DEL, C1 controls (U+009B is a one-character CSI and U+009D an OSC on
// terminals that honour 8-bit controls), the Unicode bidi embeddings, overrides and isolates that
// reorder what is shown (CVE-2021-42574 "Trojan Source"), LRM/RLM/ALM, and the line and paragraph
// separators some terminals and viewers break lines on.
const UNSAFE_ALWAYS =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_IN_LINE =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function visibleEscape(char: string): string {
  const code = char.charCodeAt(0);
  if (char === '\n') return '\\n';
  if (char === '\t') return '\\t';
  if (char === '\r') return '\\r';
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * Makes untrusted text (agent.yaml fields, store metadata, engine output, file names) safe to
 * print on a terminal: every control character a terminal would act on, and every bidi control
 * that would reorder the line, is replaced by a visible escape (`\x1b`, `\u202e`), so it is shown,
 * never obeyed. Use it on every human-readable line built from data the user did not type; never
 * on `--json` output, which must carry the data unchanged (JSON escapes C0 controls itself).
 * Colours are added after this, around the sanitised text. The CLI's output and the sandbox's
 * log lines both use this one escaper.
 */
export function terminalSafe(text: string, options: TerminalSafeOptions = {}): string {
  return text.replace(options.multiline === true ? UNSAFE_ALWAYS : UNSAFE_IN_LINE, visibleEscape);
}
