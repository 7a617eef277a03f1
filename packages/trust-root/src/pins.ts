import { TrustRootError } from './errors.js';
import { TRUST_ROOT_LIMITS } from './limits.js';

/** An RFC 7638 SHA-256 thumbprint: 32 bytes as unpadded base64url. */
const THUMBPRINT = /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;

export function isThumbprint(value: string): boolean {
  return THUMBPRINT.test(value);
}

/** Parses pins given as a list (`--pin` flags) or a comma-separated string (the environment). */
export function parsePins(input: string | readonly string[]): string[] {
  const items = typeof input === 'string' ? input.split(',') : input;
  const pins = new Set<string>();
  for (const raw of items) {
    const pin = raw.trim();
    if (pin === '') continue;
    if (!isThumbprint(pin)) {
      throw new TrustRootError(
        'ERR_PIN_INVALID',
        `pin "${pin.slice(0, 80)}" is not an RFC 7638 SHA-256 thumbprint (43 base64url characters).`,
      );
    }
    pins.add(pin);
  }
  if (pins.size > TRUST_ROOT_LIMITS.maxPins) {
    throw new TrustRootError(
      'ERR_PIN_INVALID',
      `at most ${TRUST_ROOT_LIMITS.maxPins} pins are accepted.`,
    );
  }
  return [...pins];
}
