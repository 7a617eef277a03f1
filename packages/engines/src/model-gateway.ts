import { randomBytes, timingSafeEqual } from 'node:crypto';
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { MIN_SECRET_LENGTH } from '@packwarden/runner-host';

/** How the engine CLI presents its credential (and how the upstream receives the real one). */
export type GatewayCredentialStyle = 'x-api-key' | 'bearer';

export interface ModelGatewayOptions {
  /** The model server's root (`http(s)://host[:port][/prefix]`, no `/v1`): see {@link serverRoot}. */
  upstream: string;
  /**
   * The real credential: only this process and the upstream ever see it. Absent: requests are
   * forwarded without any credential (a local server that needs none).
   */
  token?: string;
  /** `x-api-key` (Anthropic) or `Authorization: Bearer` (OpenAI). */
  style: GatewayCredentialStyle;
  /**
   * The requests forwarded, as `METHOD /path` (`*` stands for one path segment, a model id):
   * the model API's own endpoints that the CLI of `style` calls, {@link GATEWAY_ROUTES} by
   * default. Any other request is refused (403) and never forwarded.
   */
  routes?: readonly string[];
  /** Largest request body forwarded (default 32 MiB). */
  maxBodyBytes?: number;
  /** Connections open at once (default 32). */
  maxConnections?: number;
  /** A connection idle this long is closed (default 10 min: a model may think for minutes). */
  idleTimeoutMs?: number;
}

/**
 * A host-side gateway for one turn: the engine CLI gets `url` and the `placeholder` credential,
 * never the real token (engines README, "Model credentials"). A request carrying the placeholder
 * is forwarded to the upstream with the real token in its place; anything else is refused
 * with 401 and never forwarded.
 */
export interface ModelGateway {
  /** `http://127.0.0.1:PORT`: the server root the CLI talks to. */
  url: string;
  /** The per-turn credential the CLI presents; worthless once the gateway is closed. */
  placeholder: string;
  /** Requests forwarded so far (evidence for tests and logs). */
  readonly forwarded: number;
  /** Requests refused (wrong or missing credential, too large, malformed). */
  readonly refused: number;
  close(): Promise<void>;
}

/**
 * What each CLI asks of its model server, relative to the server root, and nothing else: the token
 * would otherwise lend everything it can do to whoever learns the placeholder, which a command
 * the model runs can (Claude Code's `Bash` sees it as `ANTHROPIC_API_KEY`): listing and
 * downloading the files of the key's organisation, batches, fine-tunes, vector stores, uploads.
 * Claude Code needs the Anthropic Messages API (`/v1/messages`, `/v1/messages/count_tokens`:
 * Claude Code's "LLM gateway" requirements); codex the endpoints its `codex-api` crate calls
 * under the provider's base URL (`<root>/v1`): `responses`, `responses/compact`, `models`,
 * `memories/trace_summarize`, `images/generations`, `images/edits`, `alpha/search`. Model lists
 * (`GET /v1/models`, `/v1/models/<id>`) are harmless and allowed to both. A query string is
 * kept (`/v1/messages?beta=true`); the path must match exactly, without normalisation, so
 * `/v1/messages/../files`, `/v1//files` or `%2e%2e` never pass.
 */
export const GATEWAY_ROUTES: Readonly<Record<GatewayCredentialStyle, readonly string[]>> =
  Object.freeze({
    'x-api-key': Object.freeze([
      'POST /v1/messages',
      'POST /v1/messages/count_tokens',
      'GET /v1/models',
      'GET /v1/models/*',
    ]),
    bearer: Object.freeze([
      'POST /v1/responses',
      'POST /v1/responses/compact',
      'POST /v1/memories/trace_summarize',
      'POST /v1/images/generations',
      'POST /v1/images/edits',
      'POST /v1/alpha/search',
      'GET /v1/models',
      'GET /v1/models/*',
    ]),
  });

/** A model id in a route's `*`: what model ids are made of, never `/`, `%`, `.` or `..` alone. */
const ROUTE_SEGMENT = /^(?!\.{1,2}$)[A-Za-z0-9._:@-]{1,256}$/;

function routeAllowed(routes: readonly string[], method: string, path: string): boolean {
  const asked = path.split('/');
  return routes.some((route) => {
    const space = route.indexOf(' ');
    if (route.slice(0, space) !== method) return false;
    const parts = route.slice(space + 1).split('/');
    return (
      parts.length === asked.length &&
      parts.every((part, index) =>
        part === '*' ? ROUTE_SEGMENT.test(asked[index] ?? '') : part === asked[index],
      )
    );
  });
}

/** Not forwarded either way: they describe one hop, not the request (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
]);

/**
 * The model server's root from a run's `baseUrl`: `http(s)` only, no credentials, query or
 * fragment; trailing slashes and one trailing `/v1` removed, so `http://h:1234` and
 * `http://h:1234/v1` name the same server (engines README, "Local model servers"). Returns
 * `undefined` for anything else: the engine refuses the turn rather than guess.
 */
export function serverRoot(baseUrl: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '')
    return undefined;
  let path = url.pathname.replace(/\/+$/, '');
  if (path.endsWith('/v1')) path = path.slice(0, -3);
  url.pathname = path === '' ? '/' : path;
  return url;
}

/** `root` as a string without a trailing slash (`http://h:1`, `http://h:1/prefix`). */
export function rootString(root: URL): string {
  return root.href.replace(/\/+$/, '');
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function presented(headers: IncomingHttpHeaders): string | undefined {
  const apiKey = headers['x-api-key'];
  if (typeof apiKey === 'string') return apiKey;
  const authorization = headers.authorization;
  if (typeof authorization === 'string' && /^bearer /i.test(authorization))
    return authorization.slice(7);
  return undefined;
}

/**
 * Replaces `secret` with `replacement` in a byte stream, whatever the chunking: the last
 * `secret.length - 1` bytes wait for the next chunk, so a secret split across chunks is caught.
 * Not runner-host's `StreamScrubber`: that one decodes UTF-8 text and writes `[redacted]`; a
 * response body is bytes (possibly compressed) and the token must become the exact placeholder
 * the CLI knows.
 */
export class SecretSwapStream {
  readonly #secret: Buffer;
  readonly #replacement: Buffer;
  #carry = Buffer.alloc(0);

  constructor(secret: string, replacement: string) {
    this.#secret = Buffer.from(secret);
    this.#replacement = Buffer.from(replacement);
  }

  push(chunk: Buffer): Buffer {
    const data = Buffer.concat([this.#carry, chunk]);
    const out: Buffer[] = [];
    let from = 0;
    for (;;) {
      const at = data.indexOf(this.#secret, from);
      if (at === -1) break;
      out.push(data.subarray(from, at), this.#replacement);
      from = at + this.#secret.length;
    }
    const keep = Math.max(from, data.length - (this.#secret.length - 1));
    out.push(data.subarray(from, keep));
    this.#carry = Buffer.from(data.subarray(keep));
    return Buffer.concat(out);
  }

  end(): Buffer {
    const rest = this.#carry;
    this.#carry = Buffer.alloc(0);
    return rest;
  }
}

function refuse(response: ServerResponse, status: number, message: string): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const body = JSON.stringify({
    type: 'error',
    error: { type: 'packwarden_gateway', message },
  });
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  response.end(body);
}

/**
 * Starts the per-turn model gateway on 127.0.0.1 (an ephemeral port). The engine closes it when
 * the turn ends; requests still in flight are cut.
 */
export async function startModelGateway(options: ModelGatewayOptions): Promise<ModelGateway> {
  const root = serverRoot(options.upstream);
  if (root === undefined) throw new Error('the model gateway needs an http(s) upstream root');
  const maxBody = options.maxBodyBytes ?? 32 * 1024 * 1024;
  const routes = options.routes ?? GATEWAY_ROUTES[options.style];
  const placeholder = `pw-turn-${randomBytes(24).toString('hex')}`;
  const send = root.protocol === 'https:' ? httpsRequest : httpRequest;
  const prefix = root.pathname.replace(/\/+$/, '');
  let forwarded = 0;
  let refused = 0;
  const sockets = new Set<Socket>();

  const handle = (request: IncomingMessage, response: ServerResponse): void => {
    const target = request.url ?? '';
    // Origin-form only ("/path?query"): an absolute or authority form would name another host.
    if (!target.startsWith('/') || target.startsWith('//')) {
      refused += 1;
      refuse(response, 400, 'the gateway forwards origin-form request targets only');
      request.resume();
      return;
    }
    const credential = presented(request.headers);
    if (credential === undefined || !sameSecret(credential, placeholder)) {
      refused += 1;
      refuse(response, 401, 'this gateway accepts only the credential of the current turn');
      request.resume();
      return;
    }
    const method = request.method ?? '';
    const path = target.split('?', 1)[0] ?? '';
    if (!routeAllowed(routes, method, path)) {
      refused += 1;
      refuse(
        response,
        403,
        `the gateway forwards only the model API's own requests, not ${method} ${path.slice(0, 256)}`,
      );
      request.resume();
      return;
    }
    const declared = Number(request.headers['content-length'] ?? '0');
    if (Number.isFinite(declared) && declared > maxBody) {
      refused += 1;
      refuse(response, 413, `request body over ${maxBody} bytes`);
      request.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    request.on('data', (chunk: Buffer) => {
      if (tooLarge) return;
      size += chunk.length;
      if (size > maxBody) {
        tooLarge = true;
        refused += 1;
        refuse(response, 413, `request body over ${maxBody} bytes`);
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on('error', () => response.destroy());
    request.on('end', () => {
      if (tooLarge) return;
      const headers: OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(request.headers)) {
        if (value === undefined || HOP_BY_HOP.has(name)) continue;
        if (name === 'x-api-key' || name === 'authorization') continue;
        headers[name] = value;
      }
      // Uncompressed answers, so the real token can be scrubbed from them whatever the upstream echoes.
      headers['accept-encoding'] = 'identity';
      const { token } = options;
      if (token !== undefined && token !== '') {
        if (options.style === 'x-api-key') headers['x-api-key'] = token;
        else headers.authorization = `Bearer ${token}`;
      }
      const body = Buffer.concat(chunks);
      headers['content-length'] = body.length;
      forwarded += 1;
      const upstream = send(
        {
          protocol: root.protocol,
          hostname: root.hostname,
          port: root.port,
          method,
          path: `${prefix}${target}`,
          headers,
        },
        (answer) => {
          // A token shorter than a secret can be (runner-host's MIN_SECRET_LENGTH) is not
          // scrubbed: replacing every "x" would corrupt the stream and hide nothing.
          const secret =
            options.token !== undefined && options.token.length >= MIN_SECRET_LENGTH
              ? options.token
              : undefined;
          // Headers are scrubbed as the body is: an upstream may echo the credential in one.
          const swap = (text: string) =>
            secret === undefined ? text : text.split(secret).join(placeholder);
          const out: OutgoingHttpHeaders = {};
          for (const [name, value] of Object.entries(answer.headers)) {
            if (value === undefined || HOP_BY_HOP.has(name)) continue;
            out[name] = Array.isArray(value) ? value.map(swap) : swap(value);
          }
          response.writeHead(answer.statusCode ?? 502, out);
          const scrubber =
            secret === undefined ? undefined : new SecretSwapStream(secret, placeholder);
          answer.on('data', (chunk: Buffer) => {
            const clean = scrubber === undefined ? chunk : scrubber.push(chunk);
            if (clean.length > 0) response.write(clean);
          });
          answer.on('end', () => response.end(scrubber?.end()));
          answer.on('error', () => response.destroy());
        },
      );
      upstream.on('error', (error) =>
        refuse(response, 502, `the model server could not be reached: ${error.message}`),
      );
      response.on('close', () => upstream.destroy());
      upstream.end(body);
    });
  };

  const server = createServer(handle);
  server.maxConnections = options.maxConnections ?? 32;
  server.headersTimeout = 30_000;
  server.requestTimeout = 0;
  server.keepAliveTimeout = 5_000;
  server.setTimeout(options.idleTimeoutMs ?? 600_000, (socket) => socket.destroy());
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  // No WebSocket or other protocol upgrade is forwarded (codex is told not to try).
  server.on('upgrade', (_request, socket: Socket) => {
    refused += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    placeholder,
    get forwarded() {
      return forwarded;
    },
    get refused() {
      return refused;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
