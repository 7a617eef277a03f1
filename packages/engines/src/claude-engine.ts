import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { SecretSet, type EngineEmitter } from '@packwarden/runner-host';
import type { PackEngine, PackIdentity } from './pack-engine.js';
import { effectiveFileAccess } from './permissions.js';
import { claudePermissions, type ClaudePermissionOptions } from './sdk-permissions.js';
import { ENGINE_SDKS, loadEngineSdk } from './sdk-loader.js';
import { linkedController, sdkChildEnvironment, turnFailure } from './sdk-turn.js';

/** The options this engine gives the Claude Agent SDK's `query()` (a subset of its `Options`). */
export interface ClaudeQueryOptions extends ClaudePermissionOptions {
  cwd: string;
  env: Record<string, string>;
  abortController: AbortController;
  includePartialMessages: boolean;
  settingSources: ('user' | 'project' | 'local')[];
  additionalDirectories?: string[];
  model?: string;
  resume?: string;
  pathToClaudeCodeExecutable?: string;
}

/** What this engine uses of `@anthropic-ai/claude-agent-sdk`. */
export interface ClaudeAgentSdk {
  query(params: { prompt: string; options?: ClaudeQueryOptions }): AsyncIterable<unknown>;
}

export interface CreateClaudeEngineOptions {
  pack: PackIdentity;
  /** The environment Claude Code starts from (the sandbox's own). Default `process.env`. */
  baseEnv?: Record<string, string | undefined>;
  /** The Claude Code executable (`pathToClaudeCodeExecutable`). Default: the SDK's own. */
  executablePath?: string;
  /** Imports the SDK. Default `import('@anthropic-ai/claude-agent-sdk')`. */
  loadSdk?: () => Promise<ClaudeAgentSdk>;
}

type Json = Record<string, unknown>;

const failure = (code: string, message: string) => ({ code, message });

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

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
  failure: { code: string; message: string } | undefined;

  constructor(emitter: EngineEmitter) {
    this.#emitter = emitter;
  }

  async handle(message: unknown): Promise<void> {
    if (!isObject(message)) return;
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
          this.failure ??= failure(
            'claude_error',
            `Claude Code ended the turn with an error: ${detail}`,
          );
        }
        return;
    }
  }

  async #streamEvent(event: unknown): Promise<void> {
    if (!isObject(event) || event.type !== 'content_block_delta' || !isObject(event.delta)) return;
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
    const content = isObject(message) && Array.isArray(message.content) ? message.content : [];
    // With partial messages on, the text already went out as deltas; the complete message
    // only adds what was not streamed (older CLIs, or a stand-in that does not stream).
    const streamedText = this.#streamedText;
    const streamedThinking = this.#streamedThinking;
    this.#streamedText = false;
    this.#streamedThinking = false;
    for (const block of content) {
      if (!isObject(block)) continue;
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
    const content = isObject(message) && Array.isArray(message.content) ? message.content : [];
    for (const block of content) {
      if (!isObject(block) || block.type !== 'tool_result') continue;
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
 * Code in the workspace. The run frame's `baseUrl` and `modelToken` reach it as
 * `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY` in its environment; the turn's file access
 * becomes its tools and permission mode; `nativeSessionId` resumes a session.
 */
export async function createClaudeEngine(options: CreateClaudeEngineOptions): Promise<PackEngine> {
  const sdk = await loadEngineSdk('claude', options.loadSdk ?? importClaudeSdk);
  const baseEnv = options.baseEnv ?? process.env;

  return {
    id: 'claude',
    displayName: `Claude Code (${ENGINE_SDKS.claude})`,
    async stream(message, runOptions, emitter, runtime, signal) {
      const secrets = new SecretSet();
      secrets.add(runOptions.modelToken);
      secrets.add(runOptions.gatewaySessionKey);
      for (const value of Object.values(runOptions.turnEnv ?? {})) secrets.add(value);

      const env = sdkChildEnvironment(baseEnv, runOptions);
      env.CLAUDE_CONFIG_DIR ??= join(runtime.stateDir, 'claude');
      await mkdir(env.CLAUDE_CONFIG_DIR, { recursive: true });
      if (runOptions.baseUrl !== undefined) env.ANTHROPIC_BASE_URL = runOptions.baseUrl;
      if (runOptions.modelToken !== undefined) {
        env.ANTHROPIC_API_KEY = runOptions.modelToken;
        delete env.ANTHROPIC_AUTH_TOKEN;
      }
      const model = runOptions.modelId ?? options.pack.model;
      const { controller, unlink } = linkedController(signal);
      const queryOptions: ClaudeQueryOptions = {
        ...claudePermissions(
          effectiveFileAccess(runOptions.permissions?.fileAccess, options.pack.fileAccess),
        ),
        cwd: runtime.workspaceRoot,
        env,
        abortController: controller,
        includePartialMessages: true,
        // Settings files could add hooks (commands) and permission rules: the run frame's
        // permissions are the only ones.
        settingSources: [],
        ...(runOptions.additionalDirectories?.length
          ? { additionalDirectories: [...runOptions.additionalDirectories] }
          : {}),
        ...(model !== undefined ? { model } : {}),
        ...(runOptions.nativeSessionId !== undefined ? { resume: runOptions.nativeSessionId } : {}),
        ...(options.executablePath !== undefined
          ? { pathToClaudeCodeExecutable: options.executablePath }
          : {}),
      };
      const turn = new ClaudeTurn(emitter);
      try {
        for await (const sdkMessage of sdk.query({ prompt: message, options: queryOptions })) {
          await turn.handle(sdkMessage);
        }
      } catch (error) {
        if (signal.aborted) return;
        throw turnFailure(
          'claude_failed',
          secrets.scrubText(error instanceof Error ? error.message : String(error)),
        );
      } finally {
        unlink();
      }
      if (!signal.aborted && turn.failure !== undefined) {
        throw turnFailure(turn.failure.code, secrets.scrubText(turn.failure.message));
      }
    },
  };
}
