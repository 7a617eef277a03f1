import { createHash } from 'node:crypto';
import type { AgentManifest } from '@packwarden/pack-manifest';
import {
  SecretSet,
  type EngineEmitter,
  type EngineRunOptions,
  type LogLevel,
} from '@packwarden/runner-host';
import type { CommandWrapper } from './command-wrapper.js';
import { loadCustomEngineManifest, type CustomEngineManifest } from './custom-manifest.js';
import { ENGINE_CHILD_LIMITS, logLevelOf, type EmitPayload } from './engine-child-protocol.js';
import { EngineProcess, EngineProcessError, type RunEnd } from './engine-process.js';
import { EngineError } from './errors.js';
import { resolveMcpServers } from './mcp-servers.js';
import { EMPTY_PACK_CONTENT, readPackContent, type PackContent } from './pack-content.js';
import type { PackEngine, PackIdentity } from './pack-engine.js';
import { effectiveFileAccess, type TurnFileAccess } from './permissions.js';
import type { EngineRuntime } from './runtime.js';
import { UnsafePathError, ensureDirNoFollow } from './safe-fs.js';
import { syncWorkspace, type SyncedPaths } from './workspace-sync.js';

export interface LoadCustomEngineOptions {
  pack: PackIdentity;
  /** The pack (the verified copy): its prompts, rules, skills and MCP servers reach the engine. */
  packDir?: string;
  /** Its `agent.yaml`, loaded from `packDir`. Both or neither. */
  packManifest?: AgentManifest;
  /** The pack's system prompt, when `packDir` / `packManifest` are not given. */
  systemPrompt?: () => Promise<string | undefined>;
  /** Confinement: rewrites the engine process's command (CommandWrapper). Default: none. */
  wrap?: CommandWrapper;
  /**
   * The environment the engine process starts from (complete: nothing else is inherited).
   * Default: `PATH`, `HOME`, `USER`, `LOGNAME`, `LANG`, `LANGUAGE`, `LC_*`, `TZ`, `TMPDIR`, `TERM`
   * of `process.env`. `NODE_*` variables are always removed.
   */
  env?: Record<string, string | undefined>;
  /** Start the engine process now, in this runtime (load errors then throw here). */
  runtime?: EngineRuntime;
  /** Time for the engine process to start and load the module (and to construct). Default 15000. */
  startTimeoutMs?: number;
  /** After a cancel, time for `run` to return before the engine process is killed. Default 2000. */
  killGraceMs?: number;
  /** Engine logs and console lines that belong to no run (scrubbed of the run's secrets). */
  onLog?: (level: LogLevel, message: string) => void;
}

const WIRE_CODE = /^[a-z][a-z0-9_]{0,63}$/;
const DEFAULT_ENV_NAMES = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'LANG',
  'LANGUAGE',
  'TZ',
  'TMPDIR',
  'TERM',
];

function baseEnvironment(given: Record<string, string | undefined> | undefined) {
  const env: Record<string, string> = {};
  const source = given ?? process.env;
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined || name.toUpperCase().startsWith('NODE_')) continue;
    if (given !== undefined || DEFAULT_ENV_NAMES.includes(name) || name.startsWith('LC_'))
      env[name] = value;
  }
  return env;
}

function runFailure(code: string | undefined, message: string, retryable = false): Error {
  const error = new Error(message) as Error & { code?: string; retryable?: boolean };
  if (code !== undefined && WIRE_CODE.test(code)) error.code = code;
  if (retryable) error.retryable = true;
  return error;
}

function routingKey(options: EngineRunOptions): string {
  return createHash('sha256')
    .update(JSON.stringify([options.baseUrl ?? null, options.modelToken ?? null]))
    .digest('hex');
}

function routingOf(options: EngineRunOptions): Record<string, unknown> {
  return {
    useLiteLLM: options.baseUrl !== undefined,
    ...(options.baseUrl !== undefined
      ? { baseUrl: options.baseUrl, openaiBaseUrl: options.baseUrl }
      : {}),
    ...(options.modelToken !== undefined ? { apiKey: options.modelToken } : {}),
  };
}

function loadError(error: EngineProcessError, id: string): EngineError {
  const { failure } = error;
  if (failure.kind === 'resolve')
    return new EngineError('ERR_ENGINE_RESOLVE_REFUSED', `engine ${id}: ${failure.message}`, {
      cause: error,
    });
  if (failure.kind === 'import' || failure.kind === 'export' || failure.kind === 'construct')
    return new EngineError('ERR_ENGINE_LOAD', `engine ${id}: ${failure.message}`, {
      cause: error,
    });
  return new EngineError('ERR_ENGINE_PROCESS', `engine ${id}: ${failure.message}`, {
    cause: error,
  });
}

/** The same refusal as a turn failure (the wire's snake_case codes). */
function turnError(error: unknown): Error {
  if (!(error instanceof EngineProcessError)) return runFailure('engine_failed', String(error));
  const code =
    error.failure.kind === 'resolve'
      ? 'engine_resolve_refused'
      : error.failure.kind === 'exited' ||
          error.failure.kind === 'protocol' ||
          error.failure.kind === 'timeout'
        ? 'engine_process_failed'
        : 'engine_load_failed';
  return runFailure(code, error.message);
}

/** The turn's environment: base, the run's `turnEnv`, then what the manifest asks the host to write. */
function turnEnvironment(
  manifest: CustomEngineManifest,
  base: Record<string, string>,
  runOptions: EngineRunOptions,
  engineHomeDir: string,
): Record<string, string> {
  const env: Record<string, string> = { ...base, ...(runOptions.turnEnv ?? {}) };
  if (manifest.homeEnvVar !== undefined) env[manifest.homeEnvVar] = engineHomeDir;
  const model = manifest.model;
  // Only a declared apiKeyEnvVar receives the routing key: any other variable (an engine's own
  // vendor credential) is the operator's and is never overwritten (README, "Variables the host writes").
  if (model?.apiKeyEnvVar !== undefined && runOptions.modelToken !== undefined)
    env[model.apiKeyEnvVar] = runOptions.modelToken;
  if (runOptions.baseUrl !== undefined) {
    if (model?.openaiBaseUrlEnvVar !== undefined)
      env[model.openaiBaseUrlEnvVar] = runOptions.baseUrl;
    if (model?.baseUrlEnvVar !== undefined) env[model.baseUrlEnvVar] = runOptions.baseUrl;
  }
  return env;
}

function messageWithPrompt(
  manifest: CustomEngineManifest,
  message: string,
  prompt: string | undefined,
): string {
  if (manifest.promptInjection?.mode !== 'message-suffix') return message;
  if (prompt === undefined || prompt.trim() === '') return message;
  return `${message}\n\n${prompt}`;
}

/**
 * Loads an AgentHippo Custom Engine V2 from its folder (`engine.manifest.json` and the ES module
 * it names) and hosts it out of process: a Node child, started through `options.wrap`, imports
 * the module with resolution confined to the engine and the pack, and runs each turn; this side
 * keeps the frame protocol, the credentials and the pack's files (README, "Custom engines").
 */
export async function loadCustomEngine(
  engineDir: string,
  options: LoadCustomEngineOptions,
): Promise<PackEngine> {
  const { manifest, dir, entryPath } = await loadCustomEngineManifest(engineDir);
  const { pack } = options;
  let content: PackContent = EMPTY_PACK_CONTENT;
  if (options.packDir !== undefined && options.packManifest !== undefined) {
    content = await readPackContent(options.packDir, options.packManifest);
  } else if (options.systemPrompt !== undefined) {
    const systemPrompt = await options.systemPrompt();
    if (systemPrompt !== undefined) content = { ...EMPTY_PACK_CONTENT, systemPrompt };
  }
  const roots = [dir, ...(content.packDir !== undefined ? [content.packDir] : [])];
  const baseEnv = baseEnvironment(options.env);
  const startTimeoutMs = options.startTimeoutMs ?? 15_000;
  const killGraceMs = options.killGraceMs ?? 2000;
  const secrets = new SecretSet();
  const active = new Map<string, EngineEmitter>();
  const onLog = options.onLog ?? (() => {});

  // Engine output is bounded like every other input: long messages are cut, and past a number
  // of lines per turn the rest is dropped (the budget starts again with each turn).
  let logBudget: number = ENGINE_CHILD_LIMITS.maxLogLinesPerTurn;
  function route(level: LogLevel, text: string, runId?: string): void {
    if (logBudget <= 0) return;
    logBudget -= 1;
    if (logBudget === 0) {
      level = 'warn';
      text = `engine ${manifest.id}: more than ${ENGINE_CHILD_LIMITS.maxLogLinesPerTurn} log lines; the rest of this turn's are dropped`;
    }
    // Scrubbed before it is cut: a cut must not leave the first characters of a secret behind.
    const whole = secrets.scrubText(text);
    const scrubbed =
      whole.length > ENGINE_CHILD_LIMITS.maxLogChars
        ? `${whole.slice(0, ENGINE_CHILD_LIMITS.maxLogChars)}… (cut)`
        : whole;
    const emitter =
      (runId !== undefined ? active.get(runId) : undefined) ?? [...active.values()].at(-1);
    if (emitter !== undefined) emitter.log(level, scrubbed);
    else onLog(level, scrubbed);
  }

  let current:
    | {
        process: EngineProcess;
        workspaceRoot: string;
        stateDir: string;
        fileAccess: TurnFileAccess;
        routing?: string;
      }
    | undefined;

  async function start(runtime: EngineRuntime, fileAccess: TurnFileAccess): Promise<EngineProcess> {
    return EngineProcess.start({
      fileAccess,
      entryPath,
      ...(manifest.engineExport !== undefined && manifest.engineExport !== 'default'
        ? { exportName: manifest.engineExport }
        : {}),
      roots,
      cwd: runtime.workspaceRoot,
      env: baseEnv,
      ...(options.wrap !== undefined ? { wrap: options.wrap } : {}),
      startTimeoutMs,
      onOutput: (stream, line) =>
        route(stream === 'stderr' ? 'warn' : 'info', `engine ${manifest.id} ${stream}: ${line}`),
      onLog: (level, message, runId) => route(logLevelOf(level), message, runId),
    });
  }

  // Processes asked to go, until they are gone: no new process starts before they are (a turn
  // that narrows the file access must not run while the wider walls' process still does, and
  // `dispose()` may take up to killGraceMs, or never answer).
  let retiring: Promise<unknown> = Promise.resolve();
  function retire(): void {
    const previous = current;
    current = undefined;
    if (previous !== undefined)
      retiring = Promise.all([retiring, previous.process.dispose(killGraceMs)]);
  }

  // Turns may arrive together (socket mode): one start at a time, so no process is orphaned.
  let starting: Promise<unknown> = Promise.resolve();
  // The process's walls follow the file access of the turns it serves (never wider than the
  // turn's): a turn with another file access gets a process of its own.
  function processFor(
    runtime: EngineRuntime,
    fileAccess: TurnFileAccess,
  ): Promise<NonNullable<typeof current>> {
    const next = starting.then(async () => {
      if (
        current !== undefined &&
        current.process.alive &&
        !current.process.invalidated &&
        current.workspaceRoot === runtime.workspaceRoot &&
        current.stateDir === runtime.stateDir &&
        current.fileAccess === fileAccess
      )
        return current;
      retire();
      await retiring;
      current = {
        process: await start(runtime, fileAccess),
        workspaceRoot: runtime.workspaceRoot,
        stateDir: runtime.stateDir,
        fileAccess,
      };
      return current;
    });
    starting = next.catch(() => {});
    return next;
  }

  if (options.runtime !== undefined) {
    try {
      await processFor(options.runtime, effectiveFileAccess(undefined, pack.fileAccess));
    } catch (error) {
      if (error instanceof EngineProcessError) throw loadError(error, manifest.id);
      throw error;
    }
  }

  async function prepare(
    runOptions: EngineRunOptions,
    runtime: EngineRuntime,
    emitter: EngineEmitter,
    message: string,
  ): Promise<Record<string, unknown>> {
    const key = runOptions.sessionId ?? 'default';
    const stateDir = (segments: string[]) =>
      ensureDirNoFollow(runtime.stateDir, ['engines', manifest.id, ...segments], 0o700).catch(
        (error: unknown) => {
          if (error instanceof UnsafePathError) error.code = 'engine_state_refused';
          throw error;
        },
      );
    const engineHomeDir = await stateDir(['home']);
    const engineSessionDir = await stateDir([
      'sessions',
      createHash('sha256').update(key).digest('hex').slice(0, 32),
    ]);
    let synced: SyncedPaths = {
      ...(content.systemPromptPath !== undefined
        ? { rulesFilePath: content.systemPromptPath }
        : {}),
      ...(content.skillsRoot !== undefined ? { skillsDir: content.skillsRoot } : {}),
    };
    if (manifest.workspaceSync?.enabled === true)
      synced = await syncWorkspace(runtime.workspaceRoot, manifest.workspaceSync, content);
    const env = turnEnvironment(manifest, baseEnv, runOptions, engineHomeDir);
    const mcp = resolveMcpServers(content.mcpServers, env);
    if (mcp.skipped.length > 0)
      emitter.log(
        'warn',
        `MCP servers left out (a variable they name is not set): ${mcp.skipped.join(', ')}`,
      );
    const modelId = runOptions.modelId ?? pack.model ?? manifest.model?.defaultModel;
    return {
      message: messageWithPrompt(manifest, message, content.systemPrompt),
      ...(modelId !== undefined ? { modelId } : {}),
      workspaceRoot: runtime.workspaceRoot,
      additionalDirectories: [...(runOptions.additionalDirectories ?? [])],
      permissions: {
        fileAccess: effectiveFileAccess(runOptions.permissions?.fileAccess, pack.fileAccess),
      },
      env,
      routing: routingOf(runOptions),
      session: {
        key,
        chatSessionId: key,
        contextSessionId: key,
        isEphemeral: runOptions.sessionId === undefined,
        engineHomeDir,
        engineSessionDir,
        ...(runOptions.sessionId !== undefined ? { sessionId: runOptions.sessionId } : {}),
        ...(runOptions.nativeSessionId !== undefined
          ? { nativeSessionId: runOptions.nativeSessionId }
          : {}),
      },
      agent: { id: pack.id, version: pack.version, ...synced },
      mcpServers: mcp.servers,
      stateDir: runtime.stateDir,
    };
  }

  return {
    id: manifest.id,
    displayName: manifest.displayName ?? manifest.id,
    async stream(message, runOptions, emitter, runtime, signal) {
      logBudget = ENGINE_CHILD_LIMITS.maxLogLinesPerTurn;
      secrets.addRun(runOptions);
      let turn: Record<string, unknown>;
      try {
        turn = await prepare(runOptions, runtime, emitter, message);
      } catch (error) {
        if (error instanceof UnsafePathError) throw runFailure(error.code, error.message);
        throw error;
      }
      let engine: NonNullable<typeof current>;
      try {
        engine = await processFor(
          runtime,
          effectiveFileAccess(runOptions.permissions?.fileAccess, pack.fileAccess),
        );
        const key = routingKey(runOptions);
        if (engine.routing !== key) {
          await engine.process.construct(
            {
              engineDir: dir,
              manifest: { ...manifest },
              routing: routingOf(runOptions),
              agent: { id: pack.id, version: pack.version },
              stateDir: runtime.stateDir,
            },
            startTimeoutMs,
          );
          engine.routing = key;
        }
      } catch (error) {
        retire();
        throw turnError(error);
      }
      if (signal.aborted) return;

      let reported: Error | undefined;
      let done = false;
      const handlers = {
        async emit(payload: EmitPayload): Promise<unknown> {
          switch (payload.method) {
            case 'text':
              return emitter.text(payload.delta);
            case 'thinking':
              return emitter.thinking(payload.delta);
            case 'progress':
              return emitter.progress(payload.message);
            case 'toolStart':
              return emitter.toolStart({
                toolCallId: payload.toolCallId,
                name: payload.name,
                input: payload.input,
              });
            case 'toolEnd':
              return emitter.toolEnd({
                toolCallId: payload.toolCallId,
                name: payload.name,
                output: payload.output,
                ...(payload.isError !== undefined ? { isError: payload.isError } : {}),
              });
            case 'question':
              return emitter.question({
                prompt: payload.prompt,
                ...(payload.options !== undefined ? { options: payload.options } : {}),
                ...(payload.timeoutMs !== undefined ? { timeoutMs: payload.timeoutMs } : {}),
              });
            case 'warning':
              return emitter.warning(
                WIRE_CODE.test(payload.code) ? payload.code : 'engine_warning',
                payload.message,
              );
            case 'session':
              return payload.nativeSessionId !== ''
                ? emitter.session(payload.nativeSessionId)
                : undefined;
            case 'error':
              // The contract's error() is non-fatal; the turn fails only if it never reaches done().
              reported = runFailure(
                payload.code ?? 'engine_error',
                payload.message,
                payload.retryable === true,
              );
              return emitter.warning('engine_error', payload.message);
            case 'done':
              done = true;
              return payload.nativeSessionId !== undefined && payload.nativeSessionId !== ''
                ? emitter.session(payload.nativeSessionId)
                : undefined;
          }
        },
      };

      const runId = runOptions.runId;
      let killTimer: ReturnType<typeof setTimeout> | undefined;
      const onAbort = () => {
        engine.process.cancel(runId);
        killTimer = setTimeout(() => engine.process.kill(), killGraceMs);
        killTimer.unref();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      active.set(runId, emitter);
      let end: RunEnd;
      try {
        end = await engine.process.run(runId, turn, handlers);
      } catch (error) {
        if (signal.aborted) return;
        throw turnError(error);
      } finally {
        active.delete(runId);
        signal.removeEventListener('abort', onAbort);
        if (killTimer !== undefined) clearTimeout(killTimer);
        if (engine.process.invalidated || !engine.process.alive) retire();
      }
      if (signal.aborted) return;
      if (!end.ok) {
        // A failed engine is recycled: the next turn starts a fresh process (as AgentHippo's host does).
        retire();
        throw runFailure(
          end.error.code,
          secrets.scrubText(end.error.message),
          end.error.retryable === true,
        );
      }
      if (end.nativeSessionId !== undefined && end.nativeSessionId !== '')
        await emitter.session(end.nativeSessionId);
      if (reported !== undefined && !done) throw reported;
    },
    kill() {
      current?.process.kill();
    },
    async onMaintenance() {
      const engine = current;
      if (engine === undefined || !engine.process.alive) return;
      await engine.process.maintain(startTimeoutMs).catch(() => {});
    },
    async dispose() {
      const engine = current;
      current = undefined;
      await Promise.all([retiring, engine?.process.dispose(killGraceMs)]);
    },
  };
}
