import { describe, expect, it } from 'vitest';
import { terminalSafe } from '../src/resolve-entry.js';

describe('terminalSafe', () => {
  it('shows every control character inside a line as a visible escape', () => {
    expect(terminalSafe('a\nverified b\r\tc')).toBe('a\\nverified b\\r\\tc');
    expect(terminalSafe('\u001b]52;c;eA==\u0007')).toBe('\\x1b]52;c;eA==\\x07');
    expect(terminalSafe('x\u009b31m\u007f')).toBe('x\\x9b31m\\x7f');
    expect(terminalSafe('abc\u202edcba\u2066\u2028')).toBe('abc\\u202edcba\\u2066\\u2028');
  });

  it('keeps line feeds and tabs of a block, and nothing else', () => {
    expect(terminalSafe('one\n\ttwo\r\n\u001b[2J', { multiline: true })).toBe(
      'one\n\ttwo\\r\n\\x1b[2J',
    );
  });

  it('leaves printable text, emoji and non-Latin scripts as they are', () => {
    const text = 'pack “demo” 1.2.0 — ✓ 日本語 🚀 \u00a0';
    expect(terminalSafe(text)).toBe(text);
    expect(terminalSafe(text, { multiline: true })).toBe(text);
  });
});
