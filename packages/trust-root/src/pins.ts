import { TrustRootError } from './errors.js';
import { TRUST_ROOT_LIMITS } from './limits.js';

/** An RFC 7638 SHA-256 thumbprint: 32 bytes as unpadded base64url. */
const THUMBPRINT = /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;

export function isThumbprint(value: string): boolean {
  return THUMBPRINT.test(value);
}

/**
 * Parses pins given as a list (`--pin` flags) or a comma-separated string (the environment).
 * Pins that were given must pin something: a blank `--pin ""` or a variable holding only commas
 * is refused, never read as "no pins" (which would trust every key the URL serves, and an
 * explicit list replaces the environment's pins).
 */
export function parsePins(input: string | readonly string[]): string[] {
  const items = typeof input === 'string' ? input.split(',') : input;
  const pins = new Set<string>();
  for (const raw of items) {
    const pin = raw.trim();
    // A comma list may end in a comma; a blank entry of an explicit list is a mistake.
    if (pin === '' && typeof input === 'string') continue;
    if (pin === '') {
      throw new TrustRootError('ERR_PIN_INVALID', 'a pin is blank; give an RFC 7638 thumbprint.');
    }
    if (!isThumbprint(pin)) {
      throw new TrustRootError(
        'ERR_PIN_INVALID',
        `pin "${pin.slice(0, 80)}" is not an RFC 7638 SHA-256 thumbprint (43 base64url characters).`,
      );
    }
    pins.add(pin);
  }
  if (pins.size === 0) {
    throw new TrustRootError(
      'ERR_PIN_INVALID',
      'the pins name no thumbprint; give at least one, or leave pins unset.',
    );
  }
  if (pins.size > TRUST_ROOT_LIMITS.maxPins) {
    throw new TrustRootError(
      'ERR_PIN_INVALID',
      `at most ${TRUST_ROOT_LIMITS.maxPins} pins are accepted.`,
    );
  }
  return [...pins];
}
