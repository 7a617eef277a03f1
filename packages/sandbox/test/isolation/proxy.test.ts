import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { connect, createServer as createTcpServer, type Socket } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseAllowedOrigin, type AllowedOrigin } from '../../src/isolation/origins.js';
import fc from 'fast-check';
import { ISOLATION_LIMITS } from '../../src/isolation/limits.js';
import {
  canonicalAddress,
  interfaceAddresses,
  localAddressReason,
  RequestHeadReader,
  startHostProxy,
  type HeadStep,
  type HostProxy,
} from '../../src/isolation/proxy.js';

// A real proxy on a real unix socket, real upstream servers on 127.0.0.1: every verdict is read
// from what the upstream saw (its request log), not from what the proxy says.

interface Upstream {
  port: number;
  requests: { method: string; url: string; headers: Record<string, unknown> }[];
  server: Server;
}

async function upstream(): Promise<Upstream> {
  const requests: Upstream['requests'] = [];
  const server = createHttpServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: { ...req.headers } });
    res.end(`hello from ${req.url}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { port: typeof address === 'object' && address ? address.port : 0, requests, server };
}

/** Sends raw bytes to the proxy, returns everything it answers until it closes. */
function exchange(
  socketPath: string,
  bytes: string | Buffer,
  after?: (s: Socket) => void,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let answer = '';
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1');
      after?.(socket);
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(answer));
    socket.write(bytes);
  });
}

let dir: string;
let allowed: Upstream;
let other: Upstream;
let proxy: HostProxy;
let origins: AllowedOrigin[];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pw-proxy-test-'));
  allowed = await upstream();
  other = await upstream();
  origins = [parseAllowedOrigin(`http://127.0.0.1:${allowed.port}`)];
  proxy = await startHostProxy(join(dir, 'proxy.sock'), {
    allowed: () => origins,
    now: () => 42,
    lookup: async (host) =>
      host === 'rebind.example' ? [{ address: '127.0.0.1' }] : [{ address: '192.0.2.1' }],
  });
});

afterEach(async () => {
  await proxy.close();
  for (const u of [allowed, other]) {
    u.server.closeAllConnections();
    await new Promise((resolve) => u.server.close(resolve));
  }
  await rm(dir, { recursive: true, force: true });
});

describe('host proxy', () => {
  it('forwards a plain-HTTP request to an allowed origin in origin form, without proxy headers', async () => {
    const answer = await exchange(
      proxy.socketPath,
      `GET http://127.0.0.1:${allowed.port}/v1/models?x=1 HTTP/1.1\r\nHost: 127.0.0.1:${allowed.port}\r\n` +
        'Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n\r\n',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(answer).toContain('hello from /v1/models?x=1');
    expect(allowed.requests).toHaveLength(1);
    expect(allowed.requests[0]!.url).toBe('/v1/models?x=1');
    expect(allowed.requests[0]!.headers['proxy-authorization']).toBeUndefined();
    expect(allowed.requests[0]!.headers.connection).toBe('close');
    expect(proxy.events).toEqual([
      { at: 42, target: `http://127.0.0.1:${allowed.port}`, verdict: 'allowed' },
    ]);
  });

  it('tunnels CONNECT to an allowed origin', async () => {
    let sent = false;
    const answer = await exchange(
      proxy.socketPath,
      `CONNECT 127.0.0.1:${allowed.port} HTTP/1.1\r\nHost: 127.0.0.1:${allowed.port}\r\n\r\n`,
      (socket) => {
        if (sent) return;
        sent = true;
        socket.write(`GET /through-tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      },
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\n/);
    expect(answer).toContain('hello from /through-tunnel');
    expect(allowed.requests.map((r) => r.url)).toEqual(['/through-tunnel']);
  });

  it.each([
    [
      'plain HTTP to another port',
      (p: number) => `GET http://127.0.0.1:${p}/ HTTP/1.1\r\nHost: a\r\n\r\n`,
    ],
    ['CONNECT to another port', (p: number) => `CONNECT 127.0.0.1:${p} HTTP/1.1\r\n\r\n`],
    [
      'CONNECT to the allowed host under another spelling of a different port',
      (p: number) => `CONNECT [::ffff:127.0.0.1]:${p} HTTP/1.1\r\n\r\n`,
    ],
  ])('refuses %s with 403 and the upstream sees nothing', async (_, request) => {
    const answer = await exchange(proxy.socketPath, request(other.port));
    expect(answer).toMatch(/^HTTP\/1\.1 403 Forbidden/);
    expect(other.requests).toHaveLength(0);
    expect(proxy.events[0]).toMatchObject({ verdict: 'denied' });
  });

  it('refuses an https origin reached as plain HTTP (the scheme is part of the origin)', async () => {
    origins = [parseAllowedOrigin(`https://127.0.0.1:${other.port}`)];
    const answer = await exchange(
      proxy.socketPath,
      `GET http://127.0.0.1:${other.port}/ HTTP/1.1\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 403/);
    expect(other.requests).toHaveLength(0);
  });

  it('applies a changed allow list to the next connection', async () => {
    origins = [];
    const refused = await exchange(
      proxy.socketPath,
      `GET http://127.0.0.1:${allowed.port}/ HTTP/1.1\r\n\r\n`,
    );
    expect(refused).toMatch(/^HTTP\/1\.1 403/);
    expect(allowed.requests).toHaveLength(0);
  });

  it('refuses an allowed name that resolves to a loopback address (DNS rebinding)', async () => {
    const tcp = createTcpServer((s) => s.destroy());
    let connections = 0;
    tcp.on('connection', () => connections++);
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
    const port = (tcp.address() as { port: number }).port;
    origins = [parseAllowedOrigin(`https://rebind.example:${port}`)];
    const answer = await exchange(
      proxy.socketPath,
      `CONNECT rebind.example:${port} HTTP/1.1\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 403/);
    expect(answer).toContain('resolves to a local address');
    expect(connections).toBe(0);
    await new Promise((resolve) => tcp.close(resolve));
  });

  it("refuses an allowed name that resolves to one of the host's own addresses, in any spelling", async () => {
    // A service listening on all interfaces (a dev server, docker0's side of a container) answers
    // on the host's LAN address just as on 127.0.0.1. The list is fixed, so this runs the same on
    // any machine; addresses from TEST-NET and the documentation prefix are nobody's.
    const answers: Record<string, string> = {
      'lan.example': '198.51.100.7',
      'lan-mapped.example': '::ffff:198.51.100.7',
      'lan-hex.example': '::ffff:c633:6407',
      'lan6.example': '2001:DB8:0:0::7',
    };
    const owned = await startHostProxy(join(dir, 'own.sock'), {
      allowed: () => Object.keys(answers).map((name) => parseAllowedOrigin(`${name}:443`)),
      lookup: async (host) => [{ address: answers[host]! }],
      ownAddresses: () => ['127.0.0.1', '198.51.100.7', '2001:0db8:0000:0000:0000:0000:0000:0007'],
    });
    try {
      for (const name of Object.keys(answers)) {
        const answer = await exchange(owned.socketPath, `CONNECT ${name}:443 HTTP/1.1\r\n\r\n`);
        expect(answer, name).toMatch(/^HTTP\/1\.1 403/);
        expect(answer, name).toContain('resolves to a local address');
        expect(answer, name).toContain("one of the host's own addresses");
      }
      expect(owned.events.map((event) => event.verdict)).toEqual([
        'denied',
        'denied',
        'denied',
        'denied',
      ]);
    } finally {
      await owned.close();
    }
  });

  const nonLocalInterface = interfaceAddresses().find(
    (address) => localAddressReason(address, []) === undefined,
  );

  it('reads the real interfaces by default', () => {
    expect(interfaceAddresses()).toEqual(
      Object.values(networkInterfaces()).flatMap((entries) =>
        (entries ?? []).map((entry) => entry.address),
      ),
    );
  });

  it.skipIf(nonLocalInterface === undefined)(
    "by default refuses a name resolving to this machine's own non-loopback address",
    async () => {
      const tcp = createTcpServer((s) => s.destroy());
      let connections = 0;
      tcp.on('connection', () => connections++);
      await new Promise<void>((resolve) => tcp.listen(0, resolve));
      const port = (tcp.address() as { port: number }).port;
      const owned = await startHostProxy(join(dir, 'own.sock'), {
        allowed: () => [parseAllowedOrigin(`https://ownhost.example:${port}`)],
        lookup: async () => [{ address: nonLocalInterface! }],
      });
      const answer = await exchange(
        owned.socketPath,
        `CONNECT ownhost.example:${port} HTTP/1.1\r\n\r\n`,
      );
      await owned.close();
      await new Promise((resolve) => tcp.close(resolve));
      expect(connections).toBe(0);
      expect(answer).toMatch(/^HTTP\/1\.1 403/);
      expect(answer).toContain("one of the host's own addresses");
    },
  );

  describe('local addresses in every spelling', () => {
    // Each name resolves to one address (or several); the proxy must refuse before dialling. A
    // refused name answers 403 with a `denied` event; a dialled one reaches the kernel, which
    // refuses a TCP connection to a multicast address at once: 502 with a `failed` event.
    const refused: [string, string[]][] = [
      ['loopback', ['127.0.0.1']],
      ['loopback, mapped', ['::ffff:127.0.0.1']],
      ['loopback, mapped hex', ['::ffff:7f00:1']],
      ['loopback 127/8, mapped hex', ['::ffff:7f01:203']],
      ['metadata', ['169.254.169.254']],
      ['metadata, mapped', ['::ffff:169.254.169.254']],
      ['metadata, mapped hex', ['::ffff:a9fe:a9fe']],
      ['metadata, mapped hex, upper case', ['::FFFF:A9FE:A9FE']],
      ['metadata, mapped, uncompressed', ['0:0:0:0:0:ffff:a9fe:a9fe']],
      ['link-local 169.254/16, mapped', ['::ffff:169.254.1.1']],
      ['this host 0/8', ['0.1.2.3']],
      ['unspecified, mapped', ['::ffff:0.0.0.0']],
      ['unspecified, mapped hex', ['::ffff:0:0']],
      ['IPv6 loopback', ['::1']],
      ['IPv6 loopback, uncompressed', ['0:0:0:0:0:0:0:1']],
      ['IPv6 unspecified', ['::']],
      ['IPv6 link-local', ['fe80::1']],
      ['IPv6 link-local with a zone', ['fe80::1%eth0']],
      ['IPv6 link-local, top of fe80::/10', ['febf::1']],
      ['AWS metadata over IPv6', ['fd00:ec2::254']],
      ['GCP metadata over IPv6', ['fd20:ce::254']],
      ['Alibaba metadata', ['100.100.100.200']],
      ['Alibaba metadata, mapped hex', ['::ffff:6464:64c8']],
      ['a public answer before a mapped metadata one', ['224.0.0.1', '::ffff:a9fe:a9fe']],
      ['not an IP address', ['metadata.internal']],
    ];
    const dialled: [string, string[]][] = [
      ['IPv4 multicast', ['224.0.0.1']],
      ['IPv4 multicast, mapped', ['::ffff:224.0.0.1']],
      ['IPv4 multicast, mapped hex', ['::ffff:e000:1']],
      ['IPv6 multicast', ['ff02::1']],
    ];
    const cases = [...refused, ...dialled];
    const nameOf = (label: string): string =>
      `case${cases.findIndex(([l]) => l === label)}.example`;
    const answers = new Map(cases.map(([label, addresses]) => [nameOf(label), addresses]));
    let table: HostProxy;

    beforeEach(async () => {
      table = await startHostProxy(join(dir, 'table.sock'), {
        allowed: () => [...answers.keys()].map((name) => parseAllowedOrigin(`${name}:443`)),
        lookup: async (host) => (answers.get(host) ?? []).map((address) => ({ address })),
        ownAddresses: () => ['127.0.0.1', '::1'],
      });
    });
    afterEach(() => table.close());

    it.each(refused)('refuses a name resolving to %s (%j)', async (label) => {
      const answer = await exchange(
        table.socketPath,
        `CONNECT ${nameOf(label)}:443 HTTP/1.1\r\n\r\n`,
      );
      expect(answer).toMatch(/^HTTP\/1\.1 403/);
      expect(answer).toContain('resolves to a local address');
      expect(table.events).toMatchObject([{ verdict: 'denied' }]);
    });

    it.each(dialled)('dials a name resolving to %s (%j)', async (label) => {
      const answer = await exchange(
        table.socketPath,
        `CONNECT ${nameOf(label)}:443 HTTP/1.1\r\n\r\n`,
      );
      expect(answer).toMatch(/^HTTP\/1\.1 502/);
      expect(table.events).toMatchObject([{ verdict: 'failed' }]);
    });
  });

  it.each([
    ['::ffff:169.254.169.254', '169.254.169.254'],
    ['::ffff:a9fe:a9fe', '169.254.169.254'],
    ['0:0:0:0:0:FFFF:7F00:1', '127.0.0.1'],
    ['::ffff:0:0', '0.0.0.0'],
    ['10.1.2.3', '10.1.2.3'],
    ['2001:DB8:0:0::7', '2001:db8::7'],
    ['fe80::1%eth0', 'fe80::1'],
    ['::ffff:0:7f00:1', '::ffff:0:7f00:1'],
    ['example.org', undefined],
  ])('canonicalAddress(%s) is %s', (address, canonical) => {
    expect(canonicalAddress(address)).toBe(canonical);
  });

  it.each([
    ['garbage', 'hello\r\n\r\n'],
    ['an origin-form request (not a proxy request)', 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'],
    ['https:// in absolute form', 'GET https://127.0.0.1/ HTTP/1.1\r\n\r\n'],
    ['CONNECT without a port', 'CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n'],
    ['credentials in the URL', 'GET http://u:p@127.0.0.1/ HTTP/1.1\r\n\r\n'],
    [
      'a header with a newline smuggled in',
      'GET http://127.0.0.1/ HTTP/1.1\r\nX: a\nInjected: 1\r\n\r\n',
    ],
  ])('answers 400 to %s and connects nowhere', async (_, request) => {
    const answer = await exchange(proxy.socketPath, request);
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request/);
    expect(allowed.requests).toHaveLength(0);
    expect(proxy.events[0]).toMatchObject({ verdict: 'malformed' });
  });

  it('answers 431 to a request head over the limit without waiting for its end', async () => {
    const answer = await exchange(
      proxy.socketPath,
      `GET http://127.0.0.1:${allowed.port}/ HTTP/1.1\r\nX: ${'a'.repeat(20_000)}`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 431/);
    expect(allowed.requests).toHaveLength(0);
  });

  it('drops a client that ends before its head is complete at once, without waiting for the timeout', async () => {
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(proxy.socketPath);
      let got = '';
      socket.on('data', (d) => (got += d.toString()));
      socket.on('close', () => resolve(got));
      socket.end(`GET http://127.0.0.1:${allowed.port}/ HTTP/1.1\r\nHost: x\r\n`);
    });
    expect(answer).toBe('');
    expect(allowed.requests).toHaveLength(0);
    expect(proxy.events).toEqual([
      { at: 42, target: '', verdict: 'malformed', reason: 'request head incomplete' },
    ]);
  });

  it('answers 502 when an allowed origin is down', async () => {
    const port = other.port;
    other.server.closeAllConnections();
    await new Promise((resolve) => other.server.close(resolve));
    other.server = createHttpServer();
    origins = [parseAllowedOrigin(`http://127.0.0.1:${port}`)];
    const answer = await exchange(
      proxy.socketPath,
      `GET http://127.0.0.1:${port}/ HTTP/1.1\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 502/);
    expect(proxy.events[0]).toMatchObject({ verdict: 'failed' });
    other.server.listen(0, '127.0.0.1');
  });
});

describe('RequestHeadReader', () => {
  const feed = (bytes: Buffer, cuts: number[]): HeadStep => {
    const reader = new RequestHeadReader();
    const offsets = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((x, y) => x - y);
    let from = 0;
    let step: HeadStep = { state: 'need-more' };
    for (const at of [...offsets, bytes.length]) {
      step = reader.push(bytes.subarray(from, at));
      from = at;
      if (step.state !== 'need-more') return step;
    }
    return step;
  };
  const verdict = (step: HeadStep) =>
    step.state === 'complete' ? `complete:${step.head}` : step.state;
  const max = ISOLATION_LIMITS.maxRequestHeadBytes;

  it('cut right before a terminator that ends exactly at the limit: complete, as in one piece', () => {
    const head = `GET http://a/ HTTP/1.1\r\nX: ${'a'.repeat(max - 27)}`;
    const bytes = Buffer.from(`${head}\r\n\r\n`);
    expect(bytes.indexOf('\r\n\r\n')).toBe(max);
    expect(verdict(feed(bytes, [bytes.length - 3]))).toBe(verdict(feed(bytes, [])));
    expect(feed(bytes, []).state).toBe('complete');
  });

  it('gives the same verdict for any chunking of heads around the limit', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: max - 40, max: max + 40 }),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 6 }),
        (length, terminated, cuts) => {
          const body = Buffer.alloc(length, 0x61);
          const bytes = terminated ? Buffer.concat([body, Buffer.from('\r\n\r\nrest')]) : body;
          const whole = verdict(feed(bytes, []));
          expect(verdict(feed(bytes, cuts))).toBe(whole);
          expect(whole).toBe(
            !terminated
              ? length >= max + 4
                ? 'too-large'
                : 'need-more'
              : length > max
                ? 'too-large'
                : `complete:${body.toString('latin1')}`,
          );
        },
      ),
    );
  });
});
