// Control characters a terminal acts on (C0 with ESC, which starts every CSI and OSC sequence:
// screen clears, OSC 52 clipboard writes; DEL; C1, where U+009B is a one-character CSI), the
// bidi controls that reorder what is shown, and the line breaks of every kind.
const UNSAFE =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function visibleEscape(char: string): string {
  if (char === '\n') return '\\n';
  if (char === '\r') return '\\r';
  if (char === '\t') return '\\t';
  const code = char.charCodeAt(0);
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * One entry of the sandbox's log as one line that is shown, never obeyed: much of what the log
 * carries is pack code's (engine log messages, an engine process's console output), and the log
 * goes to stderr, which `packwarden run` passes to the user's terminal as it arrives. Every
 * control character is replaced by a visible escape (`\x1b`, `\n`), so pack code can neither
 * drive the terminal nor start a line that reads like the sandbox's own.
 */
export function logLine(text: string): string {
  return text.replace(UNSAFE, visibleEscape);
}
