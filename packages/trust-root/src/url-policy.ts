import { TrustRootError } from './errors.js';
import { TRUST_ROOT_LIMITS } from './limits.js';

/** True for `localhost`, 127.0.0.0/8 and `[::1]` (the URL parser has normalised the host). */
export function isLoopbackHost(hostname: string): boolean {
  if (hostname === 'localhost' || hostname === '[::1]') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/**
 * Key sets come over HTTPS only; plain HTTP is allowed for loopback addresses, where there is no
 * network to tamper with. URLs carrying credentials are refused: nothing is ever sent but a GET.
 */
export function parseRemoteUrl(input: string | URL, what: string): URL {
  const text = typeof input === 'string' ? input.trim() : input.href;
  if (text.length > TRUST_ROOT_LIMITS.maxUrlLength) {
    throw new TrustRootError(
      'ERR_URL_INVALID',
      `${what} is longer than ${TRUST_ROOT_LIMITS.maxUrlLength} characters.`,
    );
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch (cause) {
    throw new TrustRootError('ERR_URL_INVALID', `${what} is not a valid URL.`, {
      cause,
    });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new TrustRootError(
      'ERR_URL_INVALID',
      `${what} must be an https:// URL, not ${url.protocol}.`,
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw new TrustRootError('ERR_URL_INVALID', `${what} must not carry credentials.`);
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw new TrustRootError(
      'ERR_URL_INSECURE',
      `${what} ${url.origin} uses plain HTTP; use https:// (plain HTTP is allowed only for loopback addresses).`,
    );
  }
  url.hash = '';
  return url;
}

/** The control plane's key endpoint: `GET <origin>/api/keys`. */
export function leaseKeysUrl(leaseUrl: URL): URL {
  return new URL('/api/keys', leaseUrl.origin);
}
