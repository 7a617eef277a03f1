import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly bodyBytes: number;
}

export type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/** A real HTTP server on 127.0.0.1 (ephemeral port) that records every request it receives. */
export interface KeyServer {
  readonly origin: string;
  readonly requests: RecordedRequest[];
  url(path: string): string;
  route(path: string, handler: Handler): void;
  count(path?: string): number;
  close(): Promise<void>;
}

export async function startKeyServer(): Promise<KeyServer> {
  const routes = new Map<string, Handler>();
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((request, response) => {
    let bodyBytes = 0;
    request.on('data', (chunk: Buffer) => {
      bodyBytes += chunk.length;
    });
    request.on('end', () => {
      const path = request.url ?? '/';
      requests.push({ method: request.method ?? '', path, headers: request.headers, bodyBytes });
      const handler = routes.get(path) ?? routes.get(path.split('?')[0] ?? path);
      if (handler === undefined) {
        response.writeHead(404).end('not found');
        return;
      }
      handler(request, response);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    requests,
    url: (path) => `${origin}${path}`,
    route: (path, handler) => {
      routes.set(path, handler);
    },
    count: (path) =>
      path === undefined ? requests.length : requests.filter((r) => r.path === path).length,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export function json(body: unknown, headers: Record<string, string> = {}): Handler {
  return (_request, response) => {
    response
      .writeHead(200, { 'content-type': 'application/json', ...headers })
      .end(JSON.stringify(body));
  };
}

export function status(code: number, body = ''): Handler {
  return (_request, response) => {
    response.writeHead(code, { 'content-type': 'text/plain' }).end(body);
  };
}

/** Accepts the request and never answers. */
export function hang(): Handler {
  return () => undefined;
}

/** Resets the TCP connection (RST) instead of answering. */
export function reset(): Handler {
  return (request) => {
    request.socket.resetAndDestroy();
  };
}

export function redirect(code: number, location: string): Handler {
  return (_request, response) => {
    response.writeHead(code, { location }).end();
  };
}

export function raw(body: string | Buffer, headers: Record<string, string> = {}): Handler {
  return (_request, response) => {
    response.writeHead(200, headers).end(body);
  };
}

/**
 * Streams `totalBytes` of JSON-looking filler with chunked encoding (no Content-Length), or with
 * `stall`, sends `totalBytes` and then keeps the response open forever.
 */
export function stream(
  totalBytes: number,
  options: { stall?: boolean; contentLength?: boolean } = {},
): Handler {
  return (_request, response) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (options.contentLength === true) headers['content-length'] = String(totalBytes);
    response.writeHead(200, headers);
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let sent = 0;
    const pump = (): void => {
      while (sent < totalBytes) {
        const size = Math.min(chunk.length, totalBytes - sent);
        sent += size;
        if (!response.write(chunk.subarray(0, size))) {
          response.once('drain', pump);
          return;
        }
      }
      if (options.stall !== true) response.end();
    };
    response.on('error', () => undefined);
    pump();
  };
}
