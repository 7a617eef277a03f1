import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { StoreError } from './errors.js';

/** `localhost`, 127.0.0.0/8 and `[::1]` (as the URL parser spells them). */
export function isLoopbackHost(hostname: string): boolean {
  if (hostname === 'localhost' || hostname === '[::1]') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** A store location: an http(s) URL, a file:// URL, or a plain path (made absolute). */
export function parseStoreLocation(location: string, cwd = process.cwd()): URL {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(location)) {
    let url: URL;
    try {
      url = new URL(location);
    } catch (cause) {
      throw new StoreError('ERR_STORE_URL_INVALID', `${location} is not a valid URL`, {
        cause,
        subject: location,
      });
    }
    assertFetchable(url, 'store');
    return url;
  }
  const path = isAbsolute(location) ? location : resolve(cwd, location);
  return pathToFileURL(path);
}

/** Remote URLs must be HTTPS, except loopback; no credentials in URLs; file: is local. */
export function assertFetchable(
  url: URL,
  what: string,
  options: { allowFile?: boolean } = {},
): void {
  const allowFile = options.allowFile ?? true;
  if (url.protocol === 'file:' && allowFile) return;
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new StoreError(
      'ERR_STORE_URL_INVALID',
      `${what} URL ${url.href} must use https://${allowFile ? ' or file://' : ''}`,
      {
        subject: url.href,
      },
    );
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw new StoreError(
      'ERR_STORE_URL_INVALID',
      `${what} URL ${url.origin} uses plain HTTP; use https:// (plain HTTP is allowed only for loopback addresses)`,
      { subject: url.href },
    );
  }
  if (url.username || url.password) {
    throw new StoreError('ERR_STORE_URL_INVALID', `${what} URL must not carry credentials`, {
      subject: url.origin,
    });
  }
}
