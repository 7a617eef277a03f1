import { StoreError, type StoreErrorCode } from './errors.js';
import type { ExtractLimits } from './limits.js';

// Names Windows cannot create (with any extension), the superscript-digit forms included.
const WINDOWS_RESERVED = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(\..*)?$/i;
// C0 controls, DEL and C1 controls.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const WINDOWS_FORBIDDEN = /[<>:"|?*]/;
// Bidirectional overrides and isolates (names that display as something else, "Trojan
// Source"), and the Unicode line and paragraph separators.
const DECEPTIVE = /[\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/;

function refuse(code: StoreErrorCode, message: string, path: string): never {
  throw new StoreError(code, `${message}: ${JSON.stringify(path.slice(0, 300))}`, {
    subject: path,
  });
}

/**
 * Judges one final archive path and returns its components ("." components dropped), or an
 * empty array for the archive root itself. Every refusal names the path.
 */
export function checkArchivePath(path: string, limits: ExtractLimits): string[] {
  if (CONTROL.test(path)) refuse('ERR_ARCHIVE_PATH_UNSAFE', 'control character in path', path);
  if (DECEPTIVE.test(path)) {
    refuse(
      'ERR_ARCHIVE_PATH_UNSAFE',
      'bidirectional-override or line-separator character in path',
      path,
    );
  }
  if (path.includes('\\')) refuse('ERR_ARCHIVE_PATH_UNSAFE', 'backslash in path', path);
  if (path.startsWith('/')) refuse('ERR_ARCHIVE_PATH_UNSAFE', 'absolute path', path);
  if (/^[A-Za-z]:/.test(path)) refuse('ERR_ARCHIVE_PATH_UNSAFE', 'drive letter in path', path);
  if (Buffer.byteLength(path) > limits.maxPathBytes) {
    refuse('ERR_ARCHIVE_PATH_TOO_LONG', `path longer than ${limits.maxPathBytes} bytes`, path);
  }
  const segments: string[] = [];
  const raw = path.split('/');
  for (let i = 0; i < raw.length; i++) {
    const segment = raw[i]!;
    if (segment === '.') continue;
    if (segment === '') {
      if (path === '') refuse('ERR_ARCHIVE_PATH_UNSAFE', 'empty path', path);
      refuse('ERR_ARCHIVE_PATH_UNSAFE', 'empty path component', path);
    }
    if (segment === '..') refuse('ERR_ARCHIVE_PATH_UNSAFE', 'parent-directory component', path);
    if (WINDOWS_FORBIDDEN.test(segment)) {
      refuse('ERR_ARCHIVE_PATH_UNSAFE', 'character not allowed in portable names (<>:"|?*)', path);
    }
    if (WINDOWS_RESERVED.test(segment))
      refuse('ERR_ARCHIVE_PATH_UNSAFE', 'Windows-reserved name', path);
    if (segment.endsWith('.') || segment.endsWith(' ')) {
      refuse('ERR_ARCHIVE_PATH_UNSAFE', 'name ending in a dot or space', path);
    }
    if (Buffer.byteLength(segment) > limits.maxNameBytes) {
      refuse('ERR_ARCHIVE_PATH_TOO_LONG', `name longer than ${limits.maxNameBytes} bytes`, path);
    }
    segments.push(segment);
  }
  if (segments.length > limits.maxDepth) {
    refuse('ERR_ARCHIVE_TOO_DEEP', `deeper than ${limits.maxDepth} levels`, path);
  }
  return segments;
}

/**
 * The key two names collide under on some filesystem: NFC (macOS normalises), then full case
 * folding (Windows and macOS are case-insensitive). Upper- then lower-casing folds ß and ss
 * together (ẞ lower-cases to ß, hence the explicit fold), and ligatures such as ﬀ with ff, which `toLowerCase` alone does not.
 */
export function foldName(name: string): string {
  return name.normalize('NFC').toUpperCase().toLowerCase().replace(/ß/g, 'ss').normalize('NFC');
}
