// A real TLS server on 127.0.0.1 with a certificate made for the test run (openssl), and a
// `fetch` for the client that trusts that certificate: Node 20's global fetch takes no CA, so
// this one sends https requests with node:https (the transport only; every check under test is
// the client's) and plain-HTTP ones with the global fetch.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';

export interface TlsMaterial {
  key: string;
  cert: string;
}

/**
 * A self-signed P-256 certificate made by openssl in `dir` (`key.pem`, `cert.pem`): by default
 * for IP 127.0.0.1, valid one day.
 */
export function makeCertificate(
  dir: string,
  options: { subject?: string; days?: number; loopback?: boolean } = {},
): TlsMaterial {
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-keyout', key, '-out', cert, '-days', String(options.days ?? 1)],
      ...['-subj', options.subject ?? '/CN=127.0.0.1'],
      ...(options.loopback === false ? [] : ['-addext', 'subjectAltName=IP:127.0.0.1']),
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
}

/** A self-signed certificate for IP 127.0.0.1, valid one day. */
export function makeLoopbackCertificate(dir: string): TlsMaterial {
  return makeCertificate(dir);
}

export async function serveTls(
  tls: TlsMaterial,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ server: Server; host: string }> {
  const server = createServer({ key: tls.key, cert: tls.cert }, handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, host: `127.0.0.1:${(server.address() as { port: number }).port}` };
}

/** `fetch` that trusts `ca` for https (node:https underneath), the global fetch otherwise. */
export function fetchTrusting(ca: string): typeof fetch {
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(input instanceof Request ? input.url : input);
    if (url.protocol !== 'https:') return fetch(input, init);
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const body =
      init.body === undefined || init.body === null
        ? undefined
        : Buffer.from(init.body as Uint8Array);
    return new Promise<Response>((resolve, reject) => {
      const req = request(
        url,
        { method: init.method ?? 'GET', headers, ca, signal: init.signal ?? undefined },
        (res) => {
          const answer = new Headers();
          for (const [name, value] of Object.entries(res.headers))
            for (const one of [value ?? []].flat()) answer.append(name, one);
          const status = res.statusCode ?? 500;
          const empty = status === 204 || status === 304 || init.method === 'HEAD';
          if (empty) res.resume();
          resolve(
            new Response(
              empty ? null : (Readable.toWeb(res) as WebReadableStream as ReadableStream),
              {
                status,
                headers: answer,
              },
            ),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }) as typeof fetch;
}
