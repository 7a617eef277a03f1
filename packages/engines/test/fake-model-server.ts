import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the fake model server received, as the host saw it. */
export interface ModelRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The raw body text (for searching: tokens, prompts). */
  raw: string;
  body: Record<string, unknown> | undefined;
}

/** What the scripted model answers to one model request. */
export type ModelReply =
  { text: string } | { tool: { name: string; input: Record<string, unknown> }; text?: string };

/**
 * Decides the model's reply from the request: the API (`anthropic` Messages or `openai`
 * Responses) and the parsed body. Tool turns look at whether the conversation already holds a
 * tool result (then answer in text).
 */
export type ModelScript = (api: 'anthropic' | 'openai', request: ModelRequest) => ModelReply;

export interface FakeModelServer {
  /** The server root, e.g. `http://127.0.0.1:PORT` (no `/v1`). */
  url: string;
  /** Every request, in order (headers and body). */
  requests: ModelRequest[];
  /** The model requests only (`/v1/messages`, `/responses`). */
  modelRequests(): ModelRequest[];
  close(): Promise<void>;
}

const MAX_BODY = 64 * 1024 * 1024;

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) throw new Error('body too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function sse(response: ServerResponse, events: [string, Record<string, unknown>][]): void {
  response.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'close',
  });
  for (const [event, data] of events) {
    response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }
  response.end();
}

let counter = 0;
const nextId = (prefix: string) => `${prefix}_${(counter += 1)}`;

/** The Anthropic Messages API's streaming events for one reply (docs: "Streaming Messages"). */
function anthropicEvents(reply: ModelReply, model: string): [string, Record<string, unknown>][] {
  const events: [string, Record<string, unknown>][] = [
    [
      'message_start',
      {
        type: 'message_start',
        message: {
          id: nextId('msg'),
          type: 'message',
          role: 'assistant',
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 10, output_tokens: 1 },
        },
      },
    ],
  ];
  let index = 0;
  const text = 'text' in reply ? reply.text : undefined;
  if (text !== undefined) {
    events.push(
      [
        'content_block_start',
        { type: 'content_block_start', index, content_block: { type: 'text', text: '' } },
      ],
      [
        'content_block_delta',
        { type: 'content_block_delta', index, delta: { type: 'text_delta', text } },
      ],
      ['content_block_stop', { type: 'content_block_stop', index }],
    );
    index += 1;
  }
  if ('tool' in reply) {
    const json = JSON.stringify(reply.tool.input);
    events.push(
      [
        'content_block_start',
        {
          type: 'content_block_start',
          index,
          content_block: {
            type: 'tool_use',
            id: nextId('toolu'),
            name: reply.tool.name,
            input: {},
          },
        },
      ],
      [
        'content_block_delta',
        {
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: json },
        },
      ],
      ['content_block_stop', { type: 'content_block_stop', index }],
    );
  }
  events.push(
    [
      'message_delta',
      {
        type: 'message_delta',
        delta: { stop_reason: 'tool' in reply ? 'tool_use' : 'end_turn', stop_sequence: null },
        usage: { output_tokens: 5 },
      },
    ],
    ['message_stop', { type: 'message_stop' }],
  );
  return events;
}

/** The OpenAI Responses API's streaming events for one reply (docs: "Streaming API responses"). */
function openaiEvents(reply: ModelReply, model: string): [string, Record<string, unknown>][] {
  const responseId = nextId('resp');
  const output: Record<string, unknown>[] = [];
  const events: [string, Record<string, unknown>][] = [
    [
      'response.created',
      {
        type: 'response.created',
        response: { id: responseId, object: 'response', status: 'in_progress', model, output: [] },
      },
    ],
  ];
  const text = 'text' in reply ? reply.text : undefined;
  if (text !== undefined) {
    const id = nextId('msg');
    const item = {
      id,
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text, annotations: [] }],
    };
    events.push(
      [
        'response.output_item.added',
        {
          type: 'response.output_item.added',
          output_index: output.length,
          item: { ...item, status: 'in_progress', content: [] },
        },
      ],
      [
        'response.output_text.delta',
        {
          type: 'response.output_text.delta',
          item_id: id,
          output_index: output.length,
          content_index: 0,
          delta: text,
        },
      ],
      [
        'response.output_item.done',
        { type: 'response.output_item.done', output_index: output.length, item },
      ],
    );
    output.push(item);
  }
  if ('tool' in reply) {
    const item = {
      id: nextId('fc'),
      type: 'function_call',
      status: 'completed',
      call_id: nextId('call'),
      name: reply.tool.name,
      arguments: JSON.stringify(reply.tool.input),
    };
    events.push(
      [
        'response.output_item.added',
        { type: 'response.output_item.added', output_index: output.length, item },
      ],
      [
        'response.output_item.done',
        { type: 'response.output_item.done', output_index: output.length, item },
      ],
    );
    output.push(item);
  }
  events.push([
    'response.completed',
    {
      type: 'response.completed',
      response: {
        id: responseId,
        object: 'response',
        status: 'completed',
        model,
        output,
        usage: {
          input_tokens: 10,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: 5,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: 15,
        },
      },
    },
  ]);
  return events;
}

/**
 * A model server on 127.0.0.1 that speaks the Anthropic Messages API (`POST /v1/messages`,
 * streaming or not) and the OpenAI Responses API (`POST /responses` under any prefix, streaming),
 * answering from `script`, and logging every request with its headers and body: the host-side
 * evidence of what the engine CLIs sent.
 */
export async function startFakeModelServer(script: ModelScript): Promise<FakeModelServer> {
  const requests: ModelRequest[] = [];
  const server = createServer((request, response) => {
    void (async () => {
      const raw = await readBody(request);
      let body: Record<string, unknown> | undefined;
      try {
        const parsed: unknown = raw === '' ? undefined : JSON.parse(raw);
        if (typeof parsed === 'object' && parsed !== null) body = parsed as Record<string, unknown>;
      } catch {
        body = undefined;
      }
      const path = (request.url ?? '/').split('?')[0] ?? '/';
      const logged: ModelRequest = {
        method: request.method ?? 'GET',
        path,
        headers: { ...request.headers },
        raw,
        body,
      };
      requests.push(logged);
      const model = typeof body?.model === 'string' ? body.model : 'fake-model';
      if (request.method === 'POST' && path === '/v1/messages') {
        const reply = script('anthropic', logged);
        if (body?.stream === true) return sse(response, anthropicEvents(reply, model));
        // Non-streaming (Claude Code's side requests): the same reply as one message.
        const content: Record<string, unknown>[] = [];
        if ('text' in reply && reply.text !== undefined)
          content.push({ type: 'text', text: reply.text });
        if ('tool' in reply)
          content.push({
            type: 'tool_use',
            id: nextId('toolu'),
            name: reply.tool.name,
            input: reply.tool.input,
          });
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({
            id: nextId('msg'),
            type: 'message',
            role: 'assistant',
            model,
            content,
            stop_reason: 'tool' in reply ? 'tool_use' : 'end_turn',
            stop_sequence: null,
            usage: { input_tokens: 10, output_tokens: 5 },
          }),
        );
        return;
      }
      if (request.method === 'POST' && path.endsWith('/responses')) {
        return sse(response, openaiEvents(script('openai', logged), model));
      }
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { type: 'not_found', message: `no ${path}` } }));
    })().catch((error: unknown) => {
      response.destroy(error instanceof Error ? error : new Error(String(error)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    modelRequests: () =>
      requests.filter(
        (request) => request.path === '/v1/messages' || request.path.endsWith('/responses'),
      ),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Whether the conversation in a model request already carries a tool's result. */
export function hasToolResult(api: 'anthropic' | 'openai', request: ModelRequest): boolean {
  const body = request.body ?? {};
  if (api === 'anthropic') {
    const messages = Array.isArray(body.messages) ? body.messages : [];
    const last = messages.at(-1) as { content?: unknown } | undefined;
    return (
      Array.isArray(last?.content) &&
      last.content.some(
        (block) =>
          typeof block === 'object' &&
          block !== null &&
          (block as { type?: unknown }).type === 'tool_result',
      )
    );
  }
  const input = Array.isArray(body.input) ? body.input : [];
  return input.some(
    (item) =>
      typeof item === 'object' &&
      item !== null &&
      (item as { type?: unknown }).type === 'function_call_output',
  );
}

/** The text of the tool results in a model request (what a command printed, for example). */
export function toolResultText(request: ModelRequest): string {
  return request.raw;
}
