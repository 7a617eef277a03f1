import { lookup } from 'node:dns/promises';
import { chmodSync } from 'node:fs';
import { connect as connectTcp, createServer, isIP, type Server, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { ISOLATION_LIMITS } from './limits.js';
import {
  formatTarget,
  isAllowedTarget,
  normaliseHost,
  parseAuthority,
  type AllowedOrigin,
  type ProxyTarget,
} from './origins.js';

/**
 * The host side of the `network` guarantee (docs/sandbox.md, "Confinement"): confined code has
 * no route out of its network namespace except a unix socket bound into it, and this proxy
 * behind that socket decides, per connection, whether the destination is an allowed origin.
 * It speaks the two forms HTTP clients use through `HTTP(S)_PROXY`: `CONNECT host:port` (a
 * tunnel, for TLS) and an absolute-form plain-HTTP request (`GET http://host:port/path`).
 * Everything else is refused; nothing is cached; one upstream connection per client connection.
 */

export interface ProxyEvent {
  /** Milliseconds since the epoch (the injected clock). */
  at: number;
  /** `connect://host:port` or `http://host:port`, or the raw first line when malformed. */
  target: string;
  verdict: 'allowed' | 'denied' | 'malformed' | 'failed';
  reason?: string;
}

export interface HostProxyOptions {
  /** The origins admitted now; read for every new connection, so changes apply to the next one. */
  allowed: () => Iterable<AllowedOrigin>;
  /** Clock for the event log. Default `Date.now`. */
  now?: () => number;
  /** Name resolution (a seam for tests). Default `dns.promises.lookup` with `all: true`. */
  lookup?: (host: string) => Promise<{ address: string }[]>;
}

export interface HostProxy {
  readonly socketPath: string;
  /** The most recent decisions, oldest first (bounded by `ISOLATION_LIMITS.proxyLogEntries`). */
  readonly events: readonly ProxyEvent[];
  close(): Promise<void>;
}

const REQUEST_LINE = /^([A-Z]{1,20}) ([\x21-\x7e]{1,8192}) HTTP\/1\.[01]$/;
const HEADER_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+:[\t\x20-\x7e\x80-\xff]*$/;
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization']);

function reply(client: Socket, status: string, message: string): void {
  const body = `packwarden proxy: ${message}\n`;
  client.end(
    `HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

function isLocalAddress(address: string): boolean {
  const a = address.toLowerCase();
  return (
    a.startsWith('127.') ||
    a === '0.0.0.0' ||
    a.startsWith('169.254.') ||
    a === '::' ||
    a === '::1' ||
    a.startsWith('fe80:') ||
    a.startsWith('::ffff:127.') ||
    a.startsWith('::ffff:0.0.0.0')
  );
}

/**
 * Whether `address` is one of this host's own (any interface: its LAN address, a container
 * bridge such as docker0's 172.17.0.1). A service listening on all interfaces answers there as
 * it does on loopback, so a name resolving to one is as local as one resolving to 127.0.0.1.
 */
function isOwnAddress(address: string): boolean {
  const a = address.toLowerCase();
  const v4 = a.startsWith('::ffff:') && a.includes('.') ? a.slice('::ffff:'.length) : a;
  for (const entries of Object.values(networkInterfaces()))
    for (const entry of entries ?? []) {
      const own = entry.address.toLowerCase().replace(/%.*$/, '');
      if (own === a || own === v4) return true;
    }
  return false;
}

/**
 * The address to dial. A name is resolved once here and that address is dialled, so the name
 * cannot resolve differently between the check and the connect; a name that resolves to the
 * host's own loopback, or to any other address of the host's own interfaces, is refused (an
 * allowed public name must not become a door to local services). An IP literal or `localhost`
 * in the allow list means the operator chose it.
 */
async function resolveTarget(
  host: string,
  resolve: Required<HostProxyOptions>['lookup'],
): Promise<{ address: string } | { refused: string }> {
  if (isIP(host) !== 0 || host === 'localhost') return { address: host };
  let results: { address: string }[];
  try {
    results = await resolve(host);
  } catch (error) {
    return {
      refused: `cannot resolve ${host}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    };
  }
  const first = results[0];
  if (!first) return { refused: `cannot resolve ${host}` };
  if (results.some((r) => isLocalAddress(r.address) || isOwnAddress(r.address)))
    return { refused: `${host} resolves to a local address` };
  return { address: first.address };
}

interface ParsedHead {
  target: ProxyTarget;
  /** The head to send upstream (plain HTTP only), already rewritten to origin form. */
  upstreamHead?: string;
}

function parseHead(head: string): ParsedHead | { malformed: string } {
  const lines = head.split('\r\n');
  const match = REQUEST_LINE.exec(lines[0] ?? '');
  if (!match) return { malformed: 'bad request line' };
  const headers = lines.slice(1);
  if (!headers.every((line) => HEADER_LINE.test(line))) return { malformed: 'bad header line' };
  const [, method, target] = match as unknown as [string, string, string];
  if (method === 'CONNECT') {
    const authority = parseAuthority(target);
    if (!authority) return { malformed: 'CONNECT needs host:port' };
    return { target: { scheme: 'tunnel', ...authority } };
  }
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return { malformed: 'a proxied request needs an absolute http:// URL' };
  }
  if (url.protocol !== 'http:')
    return { malformed: 'only http:// is forwarded; use CONNECT for https' };
  if (url.username !== '' || url.password !== '') return { malformed: 'credentials in the URL' };
  if (url.hostname === '') return { malformed: 'no host' };
  const authority = {
    host: normaliseHost(url.hostname),
    port: url.port === '' ? 80 : Number(url.port),
  };
  const kept = headers.filter(
    (line) => !HOP_BY_HOP.has(line.slice(0, line.indexOf(':')).toLowerCase()),
  );
  const upstreamHead =
    `${method} ${url.pathname}${url.search} HTTP/1.1\r\n` +
    [...kept, 'Connection: close'].map((line) => `${line}\r\n`).join('') +
    '\r\n';
  return { target: { scheme: 'http', ...authority }, upstreamHead };
}

export type HeadStep =
  | { state: 'need-more' }
  | { state: 'too-large' }
  | { state: 'complete'; head: string; rest: Buffer };

/**
 * Collects a request head (up to the blank line) from chunks. Its verdict depends only on the
 * bytes, never on where they were cut: past the limit plus the terminator's length the head
 * cannot end in bounds any more, and only then is it refused without having seen the end.
 */
export class RequestHeadReader {
  #buffered = Buffer.alloc(0);

  push(chunk: Buffer): HeadStep {
    this.#buffered = Buffer.concat([this.#buffered, chunk]);
    const end = this.#buffered.indexOf('\r\n\r\n');
    const max = ISOLATION_LIMITS.maxRequestHeadBytes;
    if (end === -1)
      return this.#buffered.length >= max + 4 ? { state: 'too-large' } : { state: 'need-more' };
    if (end > max) return { state: 'too-large' };
    return {
      state: 'complete',
      head: this.#buffered.subarray(0, end).toString('latin1'),
      rest: this.#buffered.subarray(end + 4),
    };
  }
}

function handleConnection(
  client: Socket,
  options: Required<HostProxyOptions>,
  record: (event: Omit<ProxyEvent, 'at'>) => void,
): void {
  let headDone = false;
  client.on('error', () => client.destroy());
  const headTimer = setTimeout(() => {
    record({ target: '', verdict: 'malformed', reason: 'request head timed out' });
    client.destroy();
  }, ISOLATION_LIMITS.requestHeadTimeoutMs);
  headTimer.unref();

  const reader = new RequestHeadReader();
  const onData = (chunk: Buffer): void => {
    const step = reader.push(chunk);
    if (step.state === 'need-more') return;
    headDone = true;
    client.off('data', onData);
    client.pause();
    clearTimeout(headTimer);
    if (step.state === 'too-large') {
      record({ target: '', verdict: 'malformed', reason: 'request head too large' });
      reply(client, '431 Request Header Fields Too Large', 'request head too large');
      return;
    }
    void forward(client, step.head, step.rest, options, record);
  };
  client.on('data', onData);
  // A client that ends before its head is complete gets nothing, at once (not at the timeout).
  client.once('end', () => {
    if (headDone) return;
    clearTimeout(headTimer);
    record({ target: '', verdict: 'malformed', reason: 'request head incomplete' });
    client.destroy();
  });
}

async function forward(
  client: Socket,
  head: string,
  rest: Buffer,
  options: Required<HostProxyOptions>,
  record: (event: Omit<ProxyEvent, 'at'>) => void,
): Promise<void> {
  const parsed = parseHead(head);
  if ('malformed' in parsed) {
    record({
      target: head.slice(0, 200).split('\r\n')[0] ?? '',
      verdict: 'malformed',
      reason: parsed.malformed,
    });
    reply(client, '400 Bad Request', parsed.malformed);
    return;
  }
  const target = formatTarget(parsed.target);
  if (!isAllowedTarget(parsed.target, options.allowed())) {
    record({ target, verdict: 'denied', reason: 'origin not allowed' });
    reply(client, '403 Forbidden', `${target} is not an allowed origin`);
    return;
  }
  const resolved = await resolveTarget(parsed.target.host, options.lookup);
  if ('refused' in resolved) {
    record({ target, verdict: 'denied', reason: resolved.refused });
    reply(client, '403 Forbidden', resolved.refused);
    return;
  }
  if (client.destroyed) return;
  const upstream = connectTcp({ host: resolved.address, port: parsed.target.port });
  const connectTimer = setTimeout(
    () => upstream.destroy(new Error('upstream connect timed out')),
    ISOLATION_LIMITS.upstreamConnectTimeoutMs,
  );
  connectTimer.unref();
  let established = false;
  upstream.on('error', (error) => {
    clearTimeout(connectTimer);
    if (established || client.destroyed) {
      client.destroy();
      return;
    }
    record({ target, verdict: 'failed', reason: error.message });
    reply(client, '502 Bad Gateway', `cannot reach ${target}`);
  });
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => {
    if (established) client.end();
  });
  upstream.once('connect', () => {
    established = true;
    clearTimeout(connectTimer);
    record({ target, verdict: 'allowed' });
    for (const socket of [client, upstream]) {
      socket.setTimeout(ISOLATION_LIMITS.idleTimeoutMs, () => {
        client.destroy();
        upstream.destroy();
      });
    }
    if (parsed.upstreamHead === undefined)
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    else upstream.write(parsed.upstreamHead, 'latin1');
    if (rest.length > 0) upstream.write(rest);
    client.pipe(upstream);
    upstream.pipe(client);
    client.resume();
  });
}

/** Starts the proxy on a unix socket at `socketPath` (mode 0600: only its owner may connect). */
export async function startHostProxy(
  socketPath: string,
  options: HostProxyOptions,
): Promise<HostProxy> {
  const settled: Required<HostProxyOptions> = {
    now: Date.now,
    lookup: (host) => lookup(host, { all: true, verbatim: true }),
    ...options,
  };
  const events: ProxyEvent[] = [];
  const record = (event: Omit<ProxyEvent, 'at'>): void => {
    events.push({ at: settled.now(), ...event });
    if (events.length > ISOLATION_LIMITS.proxyLogEntries) events.shift();
  };
  const sockets = new Set<Socket>();
  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    handleConnection(client, settled, record);
  });
  server.maxConnections = ISOLATION_LIMITS.maxConnections;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  chmodSync(socketPath, 0o600);
  return {
    socketPath,
    events,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
