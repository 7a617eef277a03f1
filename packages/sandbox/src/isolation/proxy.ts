import { chmodSync } from 'node:fs';
import {
  BlockList,
  connect as connectTcp,
  createServer,
  isIP,
  isIPv4,
  isIPv6,
  type Server,
  type Socket,
} from 'node:net';
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
  /**
   * The host's own addresses, read for every connection that resolves a name (interfaces come
   * and go: docker0 appears when docker starts). Default: every address of
   * `os.networkInterfaces()` (`interfaceAddresses`).
   */
  ownAddresses?: () => Iterable<string>;
}

export interface HostProxy {
  readonly socketPath: string;
  /** The most recent decisions, oldest first (bounded by `ISOLATION_LIMITS.proxyLogEntries`). */
  readonly events: readonly ProxyEvent[];
  /**
   * Closes every established connection whose target `allowed` no longer admits. Call it when an
   * origin is withdrawn: the list is read for each new connection, and a tunnel opened while the
   * origin was admitted would otherwise outlive it (a process a turn left behind keeps it).
   */
  revalidate(): void;
  close(): Promise<void>;
}

/** An established proxied connection and where it leads. */
interface OpenTunnel {
  target: ProxyTarget;
  client: Socket;
  upstream: Socket;
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

/**
 * Addresses a resolved name must never lead to, whatever else the allow list says. Loopback and
 * "this host" (0/8, `::`), link-local (169.254/16 with the cloud metadata service, fe80::/10),
 * and the cloud metadata services that live elsewhere: AWS's IPv6 endpoint and GCP's (both in
 * unique-local space) and Alibaba's (in 100.64/10). The rest of unique-local fc00::/7, like
 * 10/8, 172.16/12 and 192.168/16, stays reachable by name: an allowed internal service may live
 * there. Checked on the canonical form (`canonicalAddress`), so a mapped spelling is no way round.
 */
const LOCAL_ADDRESSES = (() => {
  const list = new BlockList();
  list.addSubnet('127.0.0.0', 8, 'ipv4');
  list.addSubnet('0.0.0.0', 8, 'ipv4');
  list.addSubnet('169.254.0.0', 16, 'ipv4');
  list.addAddress('100.100.100.200', 'ipv4');
  list.addAddress('::', 'ipv6');
  list.addAddress('::1', 'ipv6');
  list.addSubnet('fe80::', 10, 'ipv6');
  list.addAddress('fd00:ec2::254', 'ipv6');
  list.addAddress('fd20:ce::254', 'ipv6');
  return list;
})();

const MAPPED_HEX = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/;

/**
 * One spelling per address, so that two spellings of the same place compare equal: an
 * IPv4-mapped IPv6 address (`::ffff:169.254.169.254`, `::ffff:a9fe:a9fe`, `0:0:0:0:0:ffff:…`)
 * becomes the IPv4 address the kernel dials for it; other IPv6 addresses their compressed lower
 * case form without a zone (`fe80::1%eth0` → `fe80::1`); IPv4 stays as it is. Undefined when
 * `address` is not an IP address.
 */
export function canonicalAddress(address: string): string | undefined {
  const unzoned = address.replace(/%.*$/, '');
  if (isIPv4(unzoned)) return unzoned;
  if (!isIPv6(unzoned)) return undefined;
  // The WHATWG URL parser is the serialiser at hand: it compresses and turns a dotted tail to hex.
  const compressed = new URL(`http://[${unzoned}]/`).hostname.slice(1, -1);
  const mapped = MAPPED_HEX.exec(compressed);
  if (!mapped) return compressed;
  const high = Number.parseInt(mapped[1]!, 16);
  const low = Number.parseInt(mapped[2]!, 16);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/** The host's own addresses, from every interface (loopback, its LAN address, docker0's…). */
export function interfaceAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((entries) =>
    (entries ?? []).map((entry) => entry.address),
  );
}

/**
 * Why a resolved `address` must not be dialled, or undefined when it may be. An address of one of
 * the host's own interfaces counts as local: a service listening on all interfaces (a dev server,
 * docker0's 172.17.0.1 side of a container) answers there as it does on loopback. Anything that is
 * not an IP address is refused too: the resolver's answer is dialled, never resolved again.
 */
export function localAddressReason(
  address: string,
  ownAddresses: Iterable<string>,
): string | undefined {
  const canonical = canonicalAddress(address);
  if (canonical === undefined) return 'not an IP address';
  if (LOCAL_ADDRESSES.check(canonical, isIPv4(canonical) ? 'ipv4' : 'ipv6'))
    return 'a loopback, link-local or metadata address';
  for (const own of ownAddresses)
    if (canonicalAddress(own) === canonical) return "one of the host's own addresses";
  return undefined;
}

/**
 * The address to dial. A name is resolved once here and that address is dialled, so the name
 * cannot resolve differently between the check and the connect; a name with any answer that is
 * local (`localAddressReason`: loopback, link-local, a metadata service, an address of the host's
 * own interfaces, in any spelling) is refused (an allowed public name must not become a door to
 * local services). An IP literal or `localhost` in the allow list means the operator chose it.
 */
async function resolveTarget(
  host: string,
  options: Pick<Required<HostProxyOptions>, 'lookup' | 'ownAddresses'>,
): Promise<{ address: string } | { refused: string }> {
  if (isIP(host) !== 0 || host === 'localhost') return { address: host };
  let results: { address: string }[];
  try {
    results = await options.lookup(host);
  } catch (error) {
    return {
      refused: `cannot resolve ${host}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    };
  }
  if (results.length === 0) return { refused: `cannot resolve ${host}` };
  const own = [...options.ownAddresses()];
  for (const { address } of results) {
    const reason = localAddressReason(address, own);
    if (reason !== undefined)
      return { refused: `${host} resolves to a local address (${address}: ${reason})` };
  }
  // The canonical form is what was checked, so it is what is dialled.
  return { address: canonicalAddress(results[0]!.address)! };
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
  tunnels: Set<OpenTunnel>,
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
    void forward(client, step.head, step.rest, options, record, tunnels);
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
  tunnels: Set<OpenTunnel>,
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
  const resolved = await resolveTarget(parsed.target.host, options);
  if ('refused' in resolved) {
    record({ target, verdict: 'denied', reason: resolved.refused });
    reply(client, '403 Forbidden', resolved.refused);
    return;
  }
  if (client.destroyed) return;
  // Resolving took time: the origin may have been withdrawn meanwhile.
  if (!isAllowedTarget(parsed.target, options.allowed())) {
    record({ target, verdict: 'denied', reason: 'origin not allowed any more' });
    reply(client, '403 Forbidden', `${target} is not an allowed origin`);
    return;
  }
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
    // Withdrawn while connecting: nothing is relayed.
    if (!isAllowedTarget(parsed.target, options.allowed())) {
      record({ target, verdict: 'denied', reason: 'origin not allowed any more' });
      client.destroy();
      upstream.destroy();
      return;
    }
    const tunnel: OpenTunnel = { target: parsed.target, client, upstream };
    tunnels.add(tunnel);
    upstream.once('close', () => tunnels.delete(tunnel));
    client.once('close', () => tunnels.delete(tunnel));
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
    // node:dns/promises is loaded by the first lookup, not by every boot (issue 14).
    lookup: (host) =>
      process.getBuiltinModule('node:dns/promises').lookup(host, { all: true, verbatim: true }),
    ownAddresses: interfaceAddresses,
    ...options,
  };
  const events: ProxyEvent[] = [];
  const record = (event: Omit<ProxyEvent, 'at'>): void => {
    events.push({ at: settled.now(), ...event });
    if (events.length > ISOLATION_LIMITS.proxyLogEntries) events.shift();
  };
  const sockets = new Set<Socket>();
  const tunnels = new Set<OpenTunnel>();
  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    handleConnection(client, settled, record, tunnels);
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
    revalidate() {
      const allowed = [...settled.allowed()];
      for (const tunnel of [...tunnels]) {
        if (isAllowedTarget(tunnel.target, allowed)) continue;
        tunnels.delete(tunnel);
        record({
          target: formatTarget(tunnel.target),
          verdict: 'denied',
          reason: 'origin withdrawn: connection closed',
        });
        tunnel.client.destroy();
        tunnel.upstream.destroy();
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
