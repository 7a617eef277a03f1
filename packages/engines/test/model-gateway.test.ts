import { createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, test } from 'vitest';
import { SecretSwapStream, serverRoot, startModelGateway } from '../src/model-gateway.js';

const TOKEN = 'sk-gateway-real-token-0042';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** An upstream on loopback that logs what it receives and answers with `answer`. */
async function upstream(
  answer: (seen: Seen) => string[] = () => ['{"ok":true}'],
  headers: Record<string, string | string[]> = {},
) {
  const seen: Seen[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const entry = {
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
      };
      seen.push(entry);
      response.writeHead(200, { 'content-type': 'text/event-stream', ...headers });
      const parts = answer(entry);
      // Each part is its own write: a token may be split across chunks.
      const next = (i: number) => {
        if (i === parts.length) return response.end();
        response.write(parts[i], () => setImmediate(() => next(i + 1)));
      };
      next(0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

async function gatewayFor(
  url: string,
  style: 'x-api-key' | 'bearer' = 'x-api-key',
  maxBody?: number,
) {
  const gateway = await startModelGateway({
    upstream: url,
    token: TOKEN,
    style,
    ...(maxBody !== undefined ? { maxBodyBytes: maxBody } : {}),
  });
  closers.push(() => gateway.close());
  return gateway;
}

function send(
  url: string,
  path: string,
  headers: Record<string, string>,
  body = '',
  method = 'POST',
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const request = httpRequest(
      { host: target.hostname, port: target.port, method, path, headers },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString() }),
        );
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

describe('the model gateway', () => {
  test('forwards a request with the placeholder to the upstream (its path prefix kept) with the real token in its place', async () => {
    const server = await upstream();
    const gateway = await gatewayFor(`${server.url}/proxy/v1`);
    const answer = await send(
      gateway.url,
      '/v1/messages?beta=true',
      { 'x-api-key': gateway.placeholder, 'content-type': 'application/json' },
      '{"model":"m"}',
    );
    expect(answer).toEqual({ status: 200, text: '{"ok":true}' });
    expect(server.seen).toHaveLength(1);
    expect(server.seen[0]).toMatchObject({
      method: 'POST',
      url: '/proxy/v1/messages?beta=true',
      body: '{"model":"m"}',
    });
    expect(server.seen[0]?.headers['x-api-key']).toBe(TOKEN);
    expect(JSON.stringify(server.seen[0]?.headers)).not.toContain(gateway.placeholder);

    const bearer = await gatewayFor(server.url, 'bearer');
    await send(bearer.url, '/v1/responses', { authorization: `Bearer ${bearer.placeholder}` });
    expect(server.seen[1]?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(server.seen[1]?.headers['x-api-key']).toBeUndefined();
  });

  test('attack: a missing, wrong or stale credential is refused with 401 and never forwarded', async () => {
    const server = await upstream();
    const gateway = await gatewayFor(server.url);
    const other = await gatewayFor(server.url);
    const attempts: Record<string, string>[] = [
      {},
      { 'x-api-key': 'guess' },
      { 'x-api-key': TOKEN },
      { authorization: `Bearer ${gateway.placeholder}x` },
      { 'x-api-key': other.placeholder },
    ];
    for (const headers of attempts) {
      const answer = await send(gateway.url, '/v1/messages', headers, '{}');
      expect(answer.status).toBe(401);
    }
    expect(server.seen).toEqual([]);
    expect(gateway.refused).toBe(5);
    expect(gateway.forwarded).toBe(0);
  });

  test("attack: what the CLI never asks (the key's files, batches, fine-tunes, telemetry, a path walked out of /v1/messages) is refused (403) and never forwarded, placeholder or not", async () => {
    const server = await upstream();
    const claude = await gatewayFor(server.url, 'x-api-key');
    const codex = await gatewayFor(`${server.url}/v1`, 'bearer');
    const asClaude = (method: string, path: string) =>
      send(
        claude.url,
        path,
        { 'x-api-key': claude.placeholder },
        method === 'GET' ? '' : '{}',
        method,
      );
    const asCodex = (method: string, path: string) =>
      send(
        codex.url,
        path,
        { authorization: `Bearer ${codex.placeholder}` },
        method === 'GET' ? '' : '{}',
        method,
      );
    const forwarded = [
      await asClaude('POST', '/v1/messages?beta=true'),
      await asClaude('POST', '/v1/messages/count_tokens?beta=true'),
      await asClaude('GET', '/v1/models'),
      await asClaude('GET', '/v1/models/claude-sonnet-4-5-20250929'),
      await asCodex('POST', '/v1/responses'),
      await asCodex('POST', '/v1/responses/compact'),
      await asCodex('GET', '/v1/models?client_version=0.163.0'),
    ];
    expect(forwarded.map((answer) => answer.status)).toEqual(forwarded.map(() => 200));
    const refused = [
      await asClaude('GET', '/v1/files'),
      await asClaude('GET', '/v1/files/file_011/content'),
      await asClaude('POST', '/v1/messages/batches'),
      await asClaude('POST', '/v1/messages/../files'),
      await asClaude('POST', '/v1//messages'),
      await asClaude('POST', '/v1/%6Dessages'),
      await asClaude('POST', '/v1/messages/'),
      await asClaude('GET', '/v1/messages'),
      await asClaude('GET', '/v1/models/..'),
      await asClaude('GET', '/v1/models/a/b'),
      await asClaude('POST', '/api/event_logging/batch'),
      await asClaude('POST', '/v1/responses'),
      await asCodex('GET', '/v1/files'),
      await asCodex('POST', '/v1/fine_tuning/jobs'),
      await asCodex('GET', '/v1/organization/projects'),
      await asCodex('POST', '/v1/messages'),
      await asCodex('DELETE', '/v1/responses'),
    ];
    expect(refused.map((answer) => answer.status)).toEqual(refused.map(() => 403));
    expect(refused[0]?.text).toContain("only the model API's own requests, not GET /v1/files");
    expect(server.seen.map((seen) => `${seen.method} ${seen.url}`)).toEqual([
      'POST /v1/messages?beta=true',
      'POST /v1/messages/count_tokens?beta=true',
      'GET /v1/models',
      'GET /v1/models/claude-sonnet-4-5-20250929',
      'POST /v1/responses',
      'POST /v1/responses/compact',
      'GET /v1/models?client_version=0.163.0',
    ]);
    expect(claude.refused + codex.refused).toBe(refused.length);
  });

  test('routes: a gateway given its own list forwards exactly that', async () => {
    const server = await upstream();
    const gateway = await startModelGateway({
      upstream: server.url,
      token: TOKEN,
      style: 'bearer',
      routes: ['POST /v1/chat/completions'],
    });
    closers.push(() => gateway.close());
    const headers = { authorization: `Bearer ${gateway.placeholder}` };
    expect((await send(gateway.url, '/v1/chat/completions', headers)).status).toBe(200);
    expect((await send(gateway.url, '/v1/responses', headers)).status).toBe(403);
    expect(server.seen.map((seen) => seen.url)).toEqual(['/v1/chat/completions']);
  });

  test('attack: an absolute-form target naming another host is refused (400) and never forwarded', async () => {
    const server = await upstream();
    const gateway = await gatewayFor(server.url);
    const port = new URL(gateway.url).port;
    const reply = await new Promise<string>((resolve) => {
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write(
          `GET http://169.254.169.254/latest HTTP/1.1\r\nHost: 169.254.169.254\r\nx-api-key: ${gateway.placeholder}\r\nConnection: close\r\n\r\n`,
        );
      });
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('close', () => resolve(text));
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400/);
    expect(server.seen).toEqual([]);
  });

  test('attack: a body over the limit is refused (413) and never forwarded', async () => {
    const server = await upstream();
    const gateway = await gatewayFor(server.url, 'x-api-key', 1024);
    const answer = await send(
      gateway.url,
      '/v1/messages',
      { 'x-api-key': gateway.placeholder },
      'x'.repeat(4096),
    ).catch(() => ({ status: 413, text: '' }));
    expect(answer.status).toBe(413);
    expect(server.seen).toEqual([]);
  });

  test('attack: an upstream that echoes the real token, split across chunks, reaches the CLI as the placeholder', async () => {
    const server = await upstream(() => [
      'data: {"echo":"',
      TOKEN.slice(0, 7),
      TOKEN.slice(7, 15),
      `${TOKEN.slice(15)}"} and again ${TOKEN}`,
      '\n\n',
    ]);
    const gateway = await gatewayFor(server.url);
    const answer = await send(gateway.url, '/v1/messages', { 'x-api-key': gateway.placeholder });
    expect(answer.text).not.toContain(TOKEN);
    expect(answer.text).toBe(
      `data: {"echo":"${gateway.placeholder}"} and again ${gateway.placeholder}\n\n`,
    );
    // Compressed answers could not be scrubbed: the gateway asks for none.
    expect(server.seen[0]?.headers['accept-encoding']).toBe('identity');
  });

  test('attack: an upstream that echoes the real token in its answer headers reaches the CLI as the placeholder', async () => {
    const server = await upstream(() => ['{}'], {
      'x-request-auth': `key=${TOKEN}`,
      'set-cookie': [`a=${TOKEN}`, 'b=1'],
    });
    const gateway = await gatewayFor(server.url);
    const headers = await new Promise<IncomingMessage['headers']>((resolve, reject) => {
      const target = new URL(gateway.url);
      const request = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          method: 'POST',
          path: '/v1/messages',
          headers: { 'x-api-key': gateway.placeholder },
        },
        (response) => {
          response.resume();
          response.on('end', () => resolve(response.headers));
        },
      );
      request.on('error', reject);
      request.end('{}');
    });
    expect(JSON.stringify(headers)).not.toContain(TOKEN);
    expect(headers['x-request-auth']).toBe(`key=${gateway.placeholder}`);
    expect(headers['set-cookie']).toEqual([`a=${gateway.placeholder}`, 'b=1']);
  });

  test('a token shorter than a secret can be is not scrubbed from answers: the stream stays intact (fuzz finding: token "x" turned exec_command into e<placeholder>ec_command)', async () => {
    const server = await upstream(() => ['{"name":"exec_command","x":1}']);
    const gateway = await startModelGateway({ upstream: server.url, token: 'x', style: 'bearer' });
    closers.push(() => gateway.close());
    const answer = await send(gateway.url, '/v1/responses', {
      authorization: `Bearer ${gateway.placeholder}`,
    });
    expect(answer.text).toBe('{"name":"exec_command","x":1}');
    expect(server.seen[0]?.headers.authorization).toBe('Bearer x');
  });

  test('without a token (a local server that needs none), requests are forwarded with no credential at all', async () => {
    const server = await upstream();
    const gateway = await startModelGateway({ upstream: server.url, style: 'x-api-key' });
    closers.push(() => gateway.close());
    expect((await send(gateway.url, '/v1/messages', { 'x-api-key': 'guess' })).status).toBe(401);
    expect(
      (await send(gateway.url, '/v1/messages', { 'x-api-key': gateway.placeholder })).status,
    ).toBe(200);
    expect(server.seen).toHaveLength(1);
    expect(server.seen[0]?.headers['x-api-key']).toBeUndefined();
    expect(server.seen[0]?.headers.authorization).toBeUndefined();
  });

  test('a closed gateway accepts nothing (the placeholder is worthless after the turn)', async () => {
    const server = await upstream();
    const gateway = await startModelGateway({
      upstream: server.url,
      token: TOKEN,
      style: 'x-api-key',
    });
    await gateway.close();
    await expect(
      send(gateway.url, '/v1/messages', { 'x-api-key': gateway.placeholder }),
    ).rejects.toThrow(/ECONNREFUSED/);
    expect(server.seen).toEqual([]);
  });

  test('SecretSwapStream: whatever the chunking, the output is the input with every token replaced', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string({ maxLength: 20 }), fc.constant(TOKEN)), { maxLength: 8 }),
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 20 }),
        (pieces, sizes) => {
          const whole = Buffer.from(pieces.join(''));
          const scrubber = new SecretSwapStream(TOKEN, 'PLACEHOLDER');
          const out: Buffer[] = [];
          let at = 0;
          let i = 0;
          while (at < whole.length) {
            const size = sizes[i % sizes.length] ?? 1;
            out.push(scrubber.push(whole.subarray(at, at + size)));
            at += size;
            i += 1;
          }
          out.push(scrubber.end());
          const text = Buffer.concat(out).toString();
          expect(text).toBe(whole.toString().split(TOKEN).join('PLACEHOLDER'));
          expect(text).not.toContain(TOKEN);
        },
      ),
    );
  });

  test('serverRoot: a server root and its …/v1 are the same server; anything else is refused', () => {
    const root = (url: string) => serverRoot(url)?.href;
    expect(root('http://127.0.0.1:11434')).toBe('http://127.0.0.1:11434/');
    expect(root('http://127.0.0.1:11434/v1')).toBe('http://127.0.0.1:11434/');
    expect(root('http://127.0.0.1:11434/v1/')).toBe('http://127.0.0.1:11434/');
    expect(root('https://gw.example/llm/v1')).toBe('https://gw.example/llm');
    for (const bad of [
      'ftp://host',
      'file:///etc/passwd',
      'http://user:pass@host',
      'http://host/v1?x=1',
      'http://host/#f',
      'not a url',
    ])
      expect(root(bad)).toBeUndefined();
  });
});
