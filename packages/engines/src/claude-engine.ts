import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { EngineEmitter } from '@packwarden/runner-host';
import { isJsonObject } from './json-object.js';
import type { PackEngine } from './pack-engine.js';
import { effectiveFileAccess } from './permissions.js';
import { claudePermissions, type ClaudePermissionOptions } from './sdk-permissions.js';
import { loadSdkEngine, type SdkEngineOptions } from './sdk-engine.js';
import { ENGINE_SDKS } from './sdk-loader.js';
import {
  driveCliTurn,
  linkedController,
  openCliTurn,
  throwReportedFailure,
  type ReportedFailure,
  type VendorCli,
} from './sdk-turn.js';

/** Where Claude Code sends model requests when the run names no server. */
export const CLAUDE_DEFAULT_UPSTREAM = 'https://api.anthropic.com';

/**
 * Claude Code's switches for traffic that is not the model's (telemetry, error reports, update
 * checks, feedback): off whenever the run names a model server, so an air-gapped sandbox makes no
 * outside lookups (engines README, "Local model servers").
 */
export const CLAUDE_QUIET_ENV: Readonly<Record<string, string>> = Object.freeze({
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_TELEMETRY: '1',
  DISABLE_ERROR_REPORTING: '1',
  DISABLE_AUTOUPDATER: '1',
  DISABLE_BUG_COMMAND: '1',
  CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: '1',
});

/**
 * Claude Code's environment: the credentials it would read (the API key is routed through the
 * gateway, the others never reach it) and its configuration folder (engines README, "Model
 * credentials").
 */
const CLAUDE_CLI: VendorCli = {
  defaultUpstream: CLAUDE_DEFAULT_UPSTREAM,
  credentialStyle: 'x-api-key',
  tokenEnv: ['ANTHROPIC_API_KEY'],
  credentialEnv: ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'CLAUDE_CODE_OAUTH_TOKEN'],
  homeEnv: 'CLAUDE_CONFIG_DIR',
  homeFolder: 'claude',
};

/** The options this engine gives the Claude Agent SDK's `query()` (a subset of its `Options`). */
export interface ClaudeQueryOptions extends ClaudePermissionOptions {
  cwd: string;
  env: Record<string, string>;
  abortController: AbortController;
  includePartialMessages: boolean;
  settingSources: ('user' | 'project' | 'local')[];
  systemPrompt: { type: 'preset'; preset: 'claude_code'; append?: string };
  additionalDirectories?: string[];
  spawnClaudeCodeProcess?: (options: ClaudeSpawnOptions) => ChildProcessWithoutNullStreams;
  model?: string;
  resume?: string;
  pathToClaudeCodeExecutable?: string;
}

/** What the SDK hands `spawnClaudeCodeProcess` (its `SpawnOptions`). */
export interface ClaudeSpawnOptions {
  command: string;
  args: string[];
  cwd?: string;
  env: Record<string, string | undefined>;
  signal: AbortSignal;
}

/** What this engine uses of `@anthropic-ai/claude-agent-sdk`. */
export interface ClaudeAgentSdk {
  query(params: { prompt: string; options?: ClaudeQueryOptions }): AsyncIterable<unknown>;
}

/** The `claude` engine's options; the CLI they speak of is Claude Code. */
export interface CreateClaudeEngineOptions extends SdkEngineOptions<ClaudeAgentSdk> {
  /**
   * Set only when `wrap`'s walls enforce writes (nothing outside the workspace is writable):
   * then a `workspace-write` turn may run shell commands (engines README, "Shell commands").
   */
  confinedWrites?: boolean;
}

const importClaudeSdk = async (): Promise<ClaudeAgentSdk> =>
  (await import('@anthropic-ai/claude-agent-sdk')) as unknown as ClaudeAgentSdk;

/** Maps the SDK's message stream of one turn onto the runner-host emitter. */
class ClaudeTurn {
  readonly #emitter: EngineEmitter;
  readonly #toolNames = new Map<string, string>();
  #session: string | undefined;
  #streamedText = false;
  #streamedThinking = false;
  /** Why the turn failed, as the CLI reported it (the SDK did not throw). */
  failure: ReportedFailure | undefined;

  constructor(emitter: EngineEmitter) {
    this.#emitter = emitter;
  }

  async handle(message: unknown): Promise<void> {
    if (!isJsonObject(message)) return;
    if (typeof message.session_id === 'string' && message.session_id !== '') {
      if (message.session_id !== this.#session) {
        this.#session = message.session_id;
        await this.#emitter.session(message.session_id);
      }
    }
    const topLevel =
      message.parent_tool_use_id === null || message.parent_tool_use_id === undefined;
    switch (message.type) {
      case 'stream_event':
        return topLevel ? this.#streamEvent(message.event) : undefined;
      case 'assistant':
        return this.#assistant(message.message, topLevel);
      case 'user':
        return this.#toolResults(message.message);
      case 'result':
        if (message.is_error === true || message.subtype !== 'success') {
          const errors = Array.isArray(message.errors)
            ? message.errors.filter((error): error is string => typeof error === 'string')
            : [];
          const detail =
            errors.join('; ') ||
            (typeof message.result === 'string' && message.result !== '' ? message.result : '') ||
            String(message.subtype);
          this.failure ??= {
            code: 'claude_error',
            message: `Claude Code ended the turn with an error: ${detail}`,
          };
        }
        return;
    }
  }

  async #streamEvent(event: unknown): Promise<void> {
    if (!isJsonObject(event) || event.type !== 'content_block_delta' || !isJsonObject(event.delta))
      return;
    const { delta } = event;
    if (delta.type === 'text_delta' && typeof delta.text === 'string') {
      this.#streamedText = true;
      await this.#emitter.text(delta.text);
    } else if (delta.type === 'thinking_delta' && typeof delta.thinking === 'string') {
      this.#streamedThinking = true;
      await this.#emitter.thinking(delta.thinking);
    }
  }

  async #assistant(message: unknown, topLevel: boolean): Promise<void> {
    const content = isJsonObject(message) && Array.isArray(message.content) ? message.content : [];
    // With partial messages on, the text already went out as deltas; the complete message
    // only adds what was not streamed (older CLIs, or a stand-in that does not stream).
    const streamedText = this.#streamedText;
    const streamedThinking = this.#streamedThinking;
    this.#streamedText = false;
    this.#streamedThinking = false;
    for (const block of content) {
      if (!isJsonObject(block)) continue;
      if (block.type === 'text' && typeof block.text === 'string') {
        if (topLevel && !streamedText) await this.#emitter.text(block.text);
      } else if (block.type === 'thinking' && typeof block.thinking === 'string') {
        if (topLevel && !streamedThinking) await this.#emitter.thinking(block.thinking);
      } else if (block.type === 'tool_use' && typeof block.id === 'string') {
        const name = typeof block.name === 'string' ? block.name : 'tool';
        this.#toolNames.set(block.id, name);
        await this.#emitter.toolStart({ toolCallId: block.id, name, input: block.input });
      }
    }
  }

  async #toolResults(message: unknown): Promise<void> {
    const content = isJsonObject(message) && Array.isArray(message.content) ? message.content : [];
    for (const block of content) {
      if (!isJsonObject(block) || block.type !== 'tool_result') continue;
      if (typeof block.tool_use_id !== 'string') continue;
      await this.#emitter.toolEnd({
        toolCallId: block.tool_use_id,
        name: this.#toolNames.get(block.tool_use_id) ?? 'tool',
        output: block.content,
        ...(block.is_error === true ? { isError: true } : {}),
      });
    }
  }
}

/**
 * The `claude` engine: each turn is one `query()` of the Claude Agent SDK, which runs Claude
 * Code in the workspace. The model route goes through a host-side gateway (engines README,
 * "Model credentials"): Claude Code gets `ANTHROPIC_BASE_URL` on the gateway and a per-turn
 * placeholder as `ANTHROPIC_API_KEY`, never the run's `modelToken`. The pack's prompt is appended
 * to Claude Code's system prompt; the turn's file access becomes path-scoped tools and a
 * permission mode; `nativeSessionId` resumes a session.
 */
export async function createClaudeEngine(options: CreateClaudeEngineOptions): Promise<PackEngine> {
  const { sdk, baseEnv, packPrompt } = await loadSdkEngine('claude', options, importClaudeSdk);
  const { wrap } = options;

  return {
    id: 'claude',
    displayName: `Claude Code (${ENGINE_SDKS.claude})`,
    async stream(message, runOptions, emitter, runtime, signal) {
      const { secrets, env, route } = await openCliTurn(CLAUDE_CLI, runOptions, runtime, {
        baseEnv,
        onModelOrigin: options.onModelOrigin,
      });
      const fileAccess = effectiveFileAccess(
        runOptions.permissions?.fileAccess,
        options.pack.fileAccess,
      );
      // Claude Code refuses bypassPermissions as root unless told it runs in a sandbox: a
      // `full` turn is one the pack is allowed, and packwarden's walls are the sandbox.
      if (fileAccess === 'full' && process.getuid?.() === 0) env.IS_SANDBOX = '1';
      if (route.root !== undefined) env.ANTHROPIC_BASE_URL = route.root;
      if (route.credential !== undefined) env.ANTHROPIC_API_KEY = route.credential;
      if (route.custom) Object.assign(env, CLAUDE_QUIET_ENV);
      const model = runOptions.modelId ?? options.pack.model;
      const { controller, unlink } = linkedController(signal);
      const queryOptions: ClaudeQueryOptions = {
        ...claudePermissions(fileAccess, {
          workspace: runtime.workspaceRoot,
          ...(runOptions.additionalDirectories?.length
            ? { additionalDirectories: runOptions.additionalDirectories }
            : {}),
          confined: wrap !== undefined && options.confinedWrites === true,
        }),
        cwd: runtime.workspaceRoot,
        env,
        abortController: controller,
        includePartialMessages: true,
        // Settings files could add hooks (commands) and permission rules: the run frame's
        // permissions are the only ones.
        settingSources: [],
        // Claude Code's own prompt (tool use, the workspace) with the pack's after it.
        systemPrompt: {
          type: 'preset',
          preset: 'claude_code',
          ...(packPrompt !== undefined ? { append: packPrompt } : {}),
        },
        ...(runOptions.additionalDirectories?.length
          ? { additionalDirectories: [...runOptions.additionalDirectories] }
          : {}),
        ...(model !== undefined ? { model } : {}),
        ...(runOptions.nativeSessionId !== undefined ? { resume: runOptions.nativeSessionId } : {}),
        ...(options.executablePath !== undefined
          ? { pathToClaudeCodeExecutable: options.executablePath }
          : {}),
        ...(wrap !== undefined
          ? {
              // Every child goes through the wrapper (confinement), never around it.
              spawnClaudeCodeProcess: (spawnOptions: ClaudeSpawnOptions) => {
                const childEnv: Record<string, string> = {};
                for (const [key, value] of Object.entries(spawnOptions.env))
                  if (value !== undefined) childEnv[key] = value;
                const command = wrap({
                  file: spawnOptions.command,
                  args: spawnOptions.args,
                  cwd: spawnOptions.cwd ?? runtime.workspaceRoot,
                  env: childEnv,
                  fileAccess,
                });
                return spawn(command.file, [...command.args], {
                  cwd: command.cwd,
                  env: command.env,
                  signal: spawnOptions.signal,
                });
              },
            }
          : {}),
      };
      const turn = new ClaudeTurn(emitter);
      await driveCliTurn(
        async () => {
          for await (const sdkMessage of sdk.query({ prompt: message, options: queryOptions })) {
            await turn.handle(sdkMessage);
          }
        },
        {
          engine: 'claude',
          signal,
          secrets,
          close: async () => {
            unlink();
            await route.close();
          },
        },
      );
      throwReportedFailure(turn.failure, signal, secrets);
    },
  };
}
