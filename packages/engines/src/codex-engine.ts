import type { EngineEmitter } from '@packwarden/runner-host';
import { sdkCodexPath, writeCodexLauncher } from './codex-launcher.js';
import { refusedCalls } from './codex-rollout.js';
import { isJsonObject, type JsonObject } from './json-object.js';
import type { PackEngine } from './pack-engine.js';
import { effectiveFileAccess } from './permissions.js';
import { codexSandboxMode, type CodexSandboxMode } from './sdk-permissions.js';
import { loadSdkEngine, type SdkEngineOptions } from './sdk-engine.js';
import { ENGINE_SDKS } from './sdk-loader.js';
import {
  driveCliTurn,
  errorMessage,
  openCliTurn,
  throwReportedFailure,
  turnFailure,
  type ReportedFailure,
  type VendorCli,
} from './sdk-turn.js';

/** Where codex sends model requests when the run names no server (its OpenAI default). */
export const CODEX_DEFAULT_UPSTREAM = 'https://api.openai.com';

/** The model provider this engine defines in codex's configuration for every routed turn. */
export const CODEX_PROVIDER_ID = 'packwarden';

/** The variable that holds the gateway's per-turn placeholder (the provider's `env_key`). */
export const CODEX_PROVIDER_KEY_ENV = 'PACKWARDEN_MODEL_KEY';

/**
 * codex's environment: the credentials it would read (its API keys are routed through the
 * gateway, none of them reaches it) and its home folder (engines README, "Model credentials").
 */
const CODEX_CLI: VendorCli = {
  defaultUpstream: CODEX_DEFAULT_UPSTREAM,
  credentialStyle: 'bearer',
  tokenEnv: ['CODEX_API_KEY', 'OPENAI_API_KEY'],
  credentialEnv: ['CODEX_API_KEY', 'OPENAI_API_KEY', 'OPENAI_BASE_URL'],
  homeEnv: 'CODEX_HOME',
  homeFolder: 'codex',
};

type CodexConfigValue = string | number | boolean | CodexConfigValue[] | CodexConfig;
export const CODEX_QUIET_CONFIG = {
  check_for_update_on_startup: false,
  analytics: { enabled: false },
  feedback: { enabled: false },
  features: { apps: false, plugins: false, remote_plugin: false, plugin_sharing: false },
};

/** Codex `--config` overrides, as the SDK's `config` option takes them. */
export interface CodexConfig {
  [key: string]: CodexConfigValue;
}

/** The options this engine gives `new Codex()` (a subset of the SDK's `CodexOptions`). */
export interface CodexClientOptions {
  codexPathOverride?: string;
  config?: CodexConfig;
  env: Record<string, string>;
}

/** The thread options of a turn (a subset of the SDK's `ThreadOptions`). */
export interface CodexThreadOptions {
  sandboxMode: CodexSandboxMode;
  workingDirectory: string;
  skipGitRepoCheck: boolean;
  approvalPolicy: 'never';
  additionalDirectories?: string[];
  model?: string;
}

export interface CodexThreadLike {
  runStreamed(
    input: string,
    turnOptions?: { signal?: AbortSignal },
  ): Promise<{ events: AsyncIterable<unknown> }>;
}

/** What this engine uses of `@openai/codex-sdk`. */
export interface CodexSdk {
  Codex: new (options: CodexClientOptions) => {
    startThread(options: CodexThreadOptions): CodexThreadLike;
    resumeThread(id: string, options: CodexThreadOptions): CodexThreadLike;
  };
}

/** The `codex` engine's options; the CLI they speak of is codex. */
export interface CreateCodexEngineOptions extends SdkEngineOptions<CodexSdk> {
  /**
   * Set only when `wrap`'s walls enforce writes (nothing outside the workspace is writable):
   * codex's own sandbox cannot nest inside them (no user namespaces left), so a
   * `workspace-write` or `full` turn runs codex without it and the walls are the boundary.
   */
  confinedWrites?: boolean;
  /**
   * Where the per-turn launcher that starts codex through `wrap` is written: a host folder
   * confined code can neither see nor write (the sandbox passes its confinement's
   * `privateDir`). The host executes that file, so in a folder the walls make writable (the
   * engine state) a confined process of another session could rewrite it between its creation
   * and its use, and run code outside the walls. Default: a new private folder under
   * `os.tmpdir()` per turn (pass this option when the walls show `os.tmpdir()`).
   */
  launcherDir?: string;
}

const importCodexSdk = async (): Promise<CodexSdk> =>
  (await import('@openai/codex-sdk')) as unknown as CodexSdk;

/** Maps the JSONL thread events of one turn onto the runner-host emitter. */
class CodexTurn {
  readonly #emitter: EngineEmitter;
  /** Characters of each agent_message / reasoning item already sent. */
  readonly #sent = new Map<string, number>();
  readonly #toolsStarted = new Set<string>();
  /** Why the turn failed, as the CLI reported it (the SDK did not throw). */
  failure: ReportedFailure | undefined;
  completed = false;
  lastError: string | undefined;
  threadId: string | undefined;

  constructor(emitter: EngineEmitter) {
    this.#emitter = emitter;
  }

  async handle(event: unknown): Promise<void> {
    if (!isJsonObject(event)) return;
    switch (event.type) {
      case 'thread.started':
        if (typeof event.thread_id === 'string' && event.thread_id !== '') {
          this.threadId = event.thread_id;
          await this.#emitter.session(event.thread_id);
        }
        return;
      case 'item.started':
      case 'item.updated':
      case 'item.completed':
        if (isJsonObject(event.item)) await this.#item(event.item, event.type === 'item.completed');
        return;
      case 'turn.failed': {
        const detail = isJsonObject(event.error) ? event.error.message : undefined;
        this.failure ??= {
          code: 'codex_turn_failed',
          message: `Codex failed the turn: ${typeof detail === 'string' ? detail : 'no detail'}`,
        };
        return;
      }
      case 'turn.completed':
        this.completed = true;
        return;
      case 'error':
        // Codex also reports errors it recovers from (a retried stream): a warning, and the
        // turn's failure only if it never completes.
        if (typeof event.message === 'string') {
          this.lastError = event.message;
          await this.#emitter.warning('codex_error', event.message);
        }
        return;
    }
  }

  async #delta(item: JsonObject, send: (delta: string) => Promise<void>): Promise<void> {
    if (typeof item.id !== 'string' || typeof item.text !== 'string') return;
    const sent = this.#sent.get(item.id) ?? 0;
    if (item.text.length > sent) {
      this.#sent.set(item.id, item.text.length);
      await send(item.text.slice(sent));
    }
  }

  async #toolStart(id: string, name: string, input: unknown): Promise<void> {
    if (this.#toolsStarted.has(id)) return;
    this.#toolsStarted.add(id);
    await this.#emitter.toolStart({ toolCallId: id, name, input });
  }

  async #item(item: JsonObject, completed: boolean): Promise<void> {
    const id = typeof item.id === 'string' ? item.id : undefined;
    switch (item.type) {
      case 'agent_message':
        return this.#delta(item, (delta) => this.#emitter.text(delta));
      case 'reasoning':
        return this.#delta(item, (delta) => this.#emitter.thinking(delta));
      case 'todo_list':
        if (Array.isArray(item.items)) {
          const done = item.items.filter((todo) => isJsonObject(todo) && todo.completed === true);
          await this.#emitter.progress(`plan: ${done.length}/${item.items.length} done`);
        }
        return;
      case 'error':
        if (typeof item.message === 'string')
          await this.#emitter.warning('codex_item_error', item.message);
        return;
    }
    if (id === undefined) return;
    const tool = toolOf(item);
    if (tool === undefined) return;
    await this.#toolStart(id, tool.name, tool.input);
    if (completed) {
      await this.#emitter.toolEnd({
        toolCallId: id,
        name: tool.name,
        output: tool.output,
        ...(tool.isError ? { isError: true } : {}),
      });
    }
  }
}

/** Codex items that are tool calls, as `tool_start` / `tool_end` see them. */
function toolOf(
  item: JsonObject,
): { name: string; input: unknown; output: unknown; isError: boolean } | undefined {
  const failed = item.status === 'failed';
  switch (item.type) {
    case 'command_execution':
      return {
        name: 'command_execution',
        input: { command: item.command },
        output: { exitCode: item.exit_code, output: item.aggregated_output },
        isError: failed || (typeof item.exit_code === 'number' && item.exit_code !== 0),
      };
    case 'file_change':
      return {
        name: 'file_change',
        input: { changes: item.changes },
        output: { changes: item.changes },
        isError: failed,
      };
    case 'mcp_tool_call':
      return {
        name: `${String(item.server)}.${String(item.tool)}`,
        input: item.arguments,
        output: item.error ?? item.result,
        isError: failed,
      };
    case 'web_search':
      return {
        name: 'web_search',
        input: { query: item.query },
        output: undefined,
        isError: failed,
      };
    default:
      return undefined;
  }
}

/**
 * The `codex` engine: each turn is one `runStreamed()` of a Codex SDK thread, which runs
 * `codex exec --experimental-json` in the workspace. The run frame's `baseUrl` reaches it as the
 * SDK's `baseUrl` and `modelToken` as its `apiKey` (the SDK puts it in `CODEX_API_KEY`); the
 * turn's file access becomes its `--sandbox` mode; `nativeSessionId` resumes a thread.
 */
export async function createCodexEngine(options: CreateCodexEngineOptions): Promise<PackEngine> {
  const { sdk, baseEnv, packPrompt } = await loadSdkEngine('codex', options, importCodexSdk);

  return {
    id: 'codex',
    displayName: `Codex (${ENGINE_SDKS.codex})`,
    async stream(message, runOptions, emitter, runtime, signal) {
      const fileAccess = effectiveFileAccess(
        runOptions.permissions?.fileAccess,
        options.pack.fileAccess,
      );
      const walls =
        options.wrap !== undefined &&
        options.confinedWrites === true &&
        (fileAccess === 'workspace-write' || fileAccess === 'full');
      const sandboxMode = walls ? 'danger-full-access' : codexSandboxMode(fileAccess);
      if (sandboxMode === undefined) {
        throw turnFailure(
          'file_access_unsupported',
          'the codex engine cannot run a turn without file access: its narrowest sandbox (read-only) still reads the workspace',
        );
      }
      const { secrets, env, home, route } = await openCliTurn(CODEX_CLI, runOptions, runtime, {
        baseEnv,
        onModelOrigin: options.onModelOrigin,
      });
      if (route.credential !== undefined) env[CODEX_PROVIDER_KEY_ENV] = route.credential;
      const config: CodexConfig = {};
      if (route.root !== undefined) {
        // A provider of our own rather than `openai_base_url`: the built-in provider first tries
        // a WebSocket upgrade, which no local server (and not the gateway) speaks.
        config.model_provider = CODEX_PROVIDER_ID;
        config.model_providers = {
          [CODEX_PROVIDER_ID]: {
            name: 'packwarden',
            // codex appends `/responses`; the route is a server root (engines README).
            base_url: `${route.root}/v1`,
            wire_api: 'responses',
            supports_websockets: false,
            ...(route.credential !== undefined ? { env_key: CODEX_PROVIDER_KEY_ENV } : {}),
          },
        };
      }
      if (sandboxMode === 'workspace-write') {
        // codex's workspace-write also opens /tmp and $TMPDIR for writing by default: the
        // workspace (and the run's additional directories) are the only writable places.
        config.sandbox_workspace_write = { exclude_slash_tmp: true, exclude_tmpdir_env_var: true };
      }
      Object.assign(config, CODEX_QUIET_CONFIG);
      // Commands the model runs do not get even the placeholder credential.
      config.shell_environment_policy = { exclude: [CODEX_PROVIDER_KEY_ENV] };
      if (packPrompt !== undefined) config.developer_instructions = packPrompt;
      let launcher: Awaited<ReturnType<typeof writeCodexLauncher>> | undefined;
      if (options.wrap !== undefined) {
        // Confinement: codex starts through the wrapper, never around it; when the launcher
        // cannot be made, the turn fails rather than run codex unconfined.
        const resolved =
          options.executablePath !== undefined
            ? { executablePath: options.executablePath, pathDirs: [] }
            : sdkCodexPath(new sdk.Codex({ env: {} }));
        try {
          if (resolved === undefined) throw new Error('the SDK did not say where codex is');
          launcher = await writeCodexLauncher({
            wrap: options.wrap,
            codexPath: resolved.executablePath,
            pathDirs: resolved.pathDirs,
            cwd: runtime.workspaceRoot,
            env,
            fileAccess,
            ...(options.launcherDir !== undefined ? { dir: options.launcherDir } : {}),
          });
        } catch (error) {
          await route.close();
          throw turnFailure(
            'confinement_failed',
            `codex cannot start confined: ${errorMessage(error)}`,
          );
        }
      }
      const codex = new sdk.Codex({
        env: launcher?.env ?? env,
        ...(Object.keys(config).length > 0 ? { config } : {}),
        ...(launcher !== undefined
          ? { codexPathOverride: launcher.path }
          : options.executablePath !== undefined
            ? { codexPathOverride: options.executablePath }
            : {}),
      });
      const model = runOptions.modelId ?? options.pack.model;
      const threadOptions: CodexThreadOptions = {
        sandboxMode,
        workingDirectory: runtime.workspaceRoot,
        skipGitRepoCheck: true,
        // Nobody can approve a command inside a sandbox: the sandbox mode is the boundary.
        approvalPolicy: 'never',
        ...(runOptions.additionalDirectories?.length
          ? { additionalDirectories: [...runOptions.additionalDirectories] }
          : {}),
        ...(model !== undefined ? { model } : {}),
      };
      const thread =
        runOptions.nativeSessionId !== undefined
          ? codex.resumeThread(runOptions.nativeSessionId, threadOptions)
          : codex.startThread(threadOptions);
      const turn = new CodexTurn(emitter);
      await driveCliTurn(
        async () => {
          const { events } = await thread.runStreamed(message, { signal });
          for await (const event of events) {
            await turn.handle(event);
            if (turn.failure !== undefined) break;
          }
        },
        {
          engine: 'codex',
          signal,
          secrets,
          close: async () => {
            await route.close();
            await launcher?.remove();
          },
        },
      );
      const threadId = turn.threadId ?? runOptions.nativeSessionId;
      if (!signal.aborted && turn.completed && threadId !== undefined) {
        // Calls codex refused itself never reach its event stream: report them from its
        // session rollout, so the run shows every tool call the model made.
        const refused = await refusedCalls(home, threadId);
        if (refused === undefined) {
          await emitter.warning(
            'codex_rollout_unreadable',
            'the codex session rollout could not be read: tool calls codex refused itself are not reported',
          );
        }
        for (const call of refused ?? []) {
          await emitter.toolStart({ toolCallId: call.callId, name: call.name, input: call.input });
          await emitter.toolEnd({
            toolCallId: call.callId,
            name: call.name,
            output: call.output,
            isError: true,
          });
        }
      }
      if (!turn.completed && turn.lastError !== undefined) {
        turn.failure ??= {
          code: 'codex_error',
          message: `Codex reported an error: ${turn.lastError}`,
        };
      }
      throwReportedFailure(turn.failure, signal, secrets);
    },
  };
}
