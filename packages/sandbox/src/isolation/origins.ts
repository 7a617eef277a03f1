import { isIP } from 'node:net';
import { SandboxError } from '../errors.js';
import { ISOLATION_LIMITS } from './limits.js';

/**
 * One origin the proxy admits. `scheme: 'any'` comes from the bare `host:port` form of
 * `spec.permissions.network.allow`, which names a place to reach, not a protocol.
 */
export interface AllowedOrigin {
  scheme: 'http' | 'https' | 'any';
  /** Lower-case, IDNA-encoded; IPv6 without brackets. */
  host: string;
  port: number;
}

/** Where a proxied request wants to go. `scheme: 'tunnel'` is a CONNECT (TLS or anything). */
export interface ProxyTarget {
  scheme: 'http' | 'tunnel';
  host: string;
  port: number;
}

const DEFAULT_PORT = { http: 80, https: 443 } as const;
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[^\s:/?#@[\]\\]+):(\d{1,5})$/;

/** Lower case, no trailing dot, IPv6 without brackets: the one spelling compared. */
export function normaliseHost(hostname: string): string {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

function validPort(text: string): number | undefined {
  const port = Number(text);
  return Number.isInteger(port) && port >= 1 && port <= 65535 ? port : undefined;
}

const DNS_NAME =
  /^(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

function isPlainHost(host: string): boolean {
  return isIP(host) !== 0 || (host.length <= 253 && DNS_NAME.test(host));
}

/** `host:port` (CONNECT's authority form) → host and port, or undefined when malformed. */
export function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = HOST_PORT.exec(authority);
  if (!match) return undefined;
  const port = validPort(match[2]!);
  if (port === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(`http://${match[1]!}/`);
  } catch {
    return undefined;
  }
  if (url.hostname === '') return undefined;
  return { host: normaliseHost(url.hostname), port };
}

/**
 * Parses one entry of `allowOrigins` (`https://api.example.com`, `http://127.0.0.1:8080`,
 * `example.org:443`). Anything with a path, query, credentials or another scheme is refused:
 * an origin is a place, and a list that means more than it says must not be half-applied.
 */
export function parseAllowedOrigin(entry: string): AllowedOrigin {
  const invalid = (why: string) =>
    new SandboxError(
      'ERR_ISOLATION_POLICY_INVALID',
      `network origin ${JSON.stringify(entry.slice(0, 200))} is not allowed: ${why}`,
    );
  if (typeof entry !== 'string' || entry.length === 0) throw invalid('empty');
  if (entry.length > ISOLATION_LIMITS.maxOriginLength) throw invalid('too long');
  if (!entry.includes('://')) {
    const authority = parseAuthority(entry);
    if (!authority) throw invalid('expected scheme://host[:port] or host:port');
    if (!isPlainHost(authority.host))
      throw invalid('a host is a DNS name or an IP address (no wildcards)');
    return { scheme: 'any', ...authority };
  }
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    throw invalid('not a URL');
  }
  const scheme = url.protocol.slice(0, -1);
  if (scheme !== 'http' && scheme !== 'https') throw invalid('only http and https are proxied');
  if (url.username !== '' || url.password !== '') throw invalid('credentials are not allowed');
  if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '')
    throw invalid('an origin has no path, query or fragment');
  if (!isPlainHost(normaliseHost(url.hostname)))
    throw invalid('a host is a DNS name or an IP address (no wildcards)');
  const port = url.port === '' ? DEFAULT_PORT[scheme] : validPort(url.port);
  if (port === undefined) throw invalid('bad port');
  return { scheme, host: normaliseHost(url.hostname), port };
}

/** Whether `target` is one of `allowed`. A tunnel may reach an http, https or bare origin. */
export function isAllowedTarget(target: ProxyTarget, allowed: Iterable<AllowedOrigin>): boolean {
  const host = normaliseHost(target.host);
  for (const origin of allowed) {
    if (origin.host !== host || origin.port !== target.port) continue;
    if (target.scheme === 'tunnel' || origin.scheme !== 'https') return true;
  }
  return false;
}

export function formatTarget(target: ProxyTarget): string {
  const host = target.host.includes(':') ? `[${target.host}]` : target.host;
  return `${target.scheme === 'tunnel' ? 'connect' : 'http'}://${host}:${target.port}`;
}
