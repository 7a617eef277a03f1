import * as z from 'zod';
import { ENV_VAR_NAME_PATTERN } from './custom-manifest.js';

/**
 * MCP servers a pack declares. Packs carry them as files in the Claude / Cursor `.mcp.json`
 * shape, `{ "mcpServers": { "<name>": { command, args?, env? } | { url, type?, headers?,
 * bearerTokenEnv? } } }`, named by `spec.mcp` in `agent.yaml` (`{ config: ./mcp/servers.json }`
 * or a list of `{ name?, config }`). Engines read them as `turn.mcpServers`, a record of the same
 * entries with `${env:NAME}` expanded and `bearerTokenEnv` turned into an `Authorization` header,
 * both against the turn's environment (README, "The turn").
 */
export const MCP_LIMITS = Object.freeze({
  /** Bytes of one MCP configuration file. */
  maxFileBytes: 256 * 1024,
  /** Configuration files named by `spec.mcp`. */
  maxFiles: 16,
  /** Servers over all files. */
  maxServers: 64,
});

const MCP_SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const text = z.string().max(8192);
const stringRecord = z
  .record(z.string().max(256), text)
  .refine((value) => Object.keys(value).length <= 256, { message: 'too many entries' });

const stdioServer = z.looseObject({
  command: z.string().min(1).max(4096),
  args: z.array(text).max(256).optional(),
  env: stringRecord.optional(),
});
const remoteServer = z.looseObject({
  url: z.string().min(1).max(8192),
  type: z.enum(['http', 'sse', 'streamable-http']).optional(),
  headers: stringRecord.optional(),
  bearerTokenEnv: z.string().regex(ENV_VAR_NAME_PATTERN).optional(),
});
const serverSchema = z.union([stdioServer, remoteServer]);
export type McpServerConfig = z.infer<typeof serverSchema>;

export const mcpConfigFileSchema = z.looseObject({
  mcpServers: z
    .record(z.string().regex(MCP_SERVER_NAME, { message: 'must be a server name' }), serverSchema)
    .refine((value) => Object.keys(value).length <= MCP_LIMITS.maxServers, {
      message: `more than ${MCP_LIMITS.maxServers} servers`,
    }),
});

/** Parses one configuration file's JSON; returns the issue text when it is not one. */
export function parseMcpConfig(
  json: unknown,
): { servers: Record<string, McpServerConfig> } | { issue: string } {
  const parsed = mcpConfigFileSchema.safeParse(json);
  if (!parsed.success)
    return {
      issue: parsed.error.issues
        .slice(0, 5)
        .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
        .join('; '),
    };
  return { servers: parsed.data.mcpServers };
}

const REFERENCE = /\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Expands `${env:NAME}`; undefined when a named variable is not set. */
function expand(value: string, env: Readonly<Record<string, string>>): string | undefined {
  let missing = false;
  const out = value.replace(REFERENCE, (_match, name: string) => {
    const found = Object.hasOwn(env, name) ? env[name] : undefined;
    if (found === undefined) missing = true;
    return found ?? '';
  });
  return missing ? undefined : out;
}

function expandRecord(
  record: Record<string, string> | undefined,
  env: Readonly<Record<string, string>>,
): Record<string, string> | undefined | null {
  if (record === undefined) return undefined;
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(record)) {
    const expanded = expand(value, env);
    if (expanded === undefined) return null;
    out[key] = expanded;
  }
  return out;
}

/**
 * The turn's `mcpServers`: each server with its references resolved against `env`. A server
 * naming a variable the turn does not have is left out (and named in `skipped`): a URL or a
 * command with a hole in it would fail later, less clearly.
 */
export function resolveMcpServers(
  servers: Readonly<Record<string, McpServerConfig>>,
  env: Readonly<Record<string, string>>,
): { servers: Record<string, Record<string, unknown>>; skipped: string[] } {
  const out: Record<string, Record<string, unknown>> = {};
  const skipped: string[] = [];
  for (const [name, server] of Object.entries(servers)) {
    const resolved = resolveOne(server, env);
    if (resolved === undefined) skipped.push(name);
    else out[name] = resolved;
  }
  return { servers: out, skipped };
}

function resolveOne(
  server: McpServerConfig,
  env: Readonly<Record<string, string>>,
): Record<string, unknown> | undefined {
  if ('command' in server && typeof server.command === 'string') {
    const stdio = server as z.infer<typeof stdioServer>;
    const command = expand(stdio.command, env);
    const args = stdio.args?.map((arg) => expand(arg, env));
    const childEnv = expandRecord(stdio.env, env);
    if (command === undefined || args?.includes(undefined) || childEnv === null) return undefined;
    return {
      ...stdio,
      command,
      ...(args !== undefined ? { args } : {}),
      ...(childEnv !== undefined ? { env: childEnv } : {}),
    };
  }
  const { bearerTokenEnv, ...remote } = server as z.infer<typeof remoteServer>;
  const url = expand(remote.url, env);
  const headers = expandRecord(remote.headers, env);
  if (url === undefined || headers === null) return undefined;
  const allHeaders: Record<string, string> = { ...(headers ?? {}) };
  if (bearerTokenEnv !== undefined) {
    const token = Object.hasOwn(env, bearerTokenEnv) ? env[bearerTokenEnv] : undefined;
    if (token === undefined || token === '') return undefined;
    allHeaders.Authorization = `Bearer ${token}`;
  }
  return {
    ...remote,
    type: remote.type ?? 'http',
    url,
    ...(Object.keys(allHeaders).length > 0 ? { headers: allHeaders } : {}),
  };
}
