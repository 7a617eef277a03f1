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

/**
 * A document or hop read over https may not send the client on over plain http, not even to a
 * loopback address (the https-or-loopback rule alone would let it): a remote store could
 * otherwise make every client GET whatever listens on its own 127.0.0.1, and take the answer as
 * the artifact. An `http:` start (itself loopback) may stay on plain http.
 */
export function isDowngrade(from: URL, to: URL): boolean {
  return from.protocol === 'https:' && to.protocol === 'http:';
}

/** {@link isDowngrade}, refused with `ERR_STORE_URL_INVALID` naming `what`. */
export function assertNoDowngrade(from: URL, to: URL, what: string): void {
  if (!isDowngrade(from, to)) return;
  throw new StoreError(
    'ERR_STORE_URL_INVALID',
    `${what} ${to.origin} uses plain http, but ${from.origin} was reached over https; plain http is never reached from https (not even on loopback)`,
    // No query in the subject: a redirect to object storage carries a signature there.
    { subject: `${to.origin}${to.pathname}` },
  );
}
