import { createHash } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import type { EngineEmitter, EngineRunOptions } from '@packwarden/runner-host';
import { EngineError } from './errors.js';
import { loadCustomEngineManifest } from './custom-manifest.js';
import type { PackEngine, PackIdentity } from './pack-engine.js';
import { effectiveFileAccess } from './permissions.js';
import type { EngineRuntime } from './runtime.js';
import type {
  CustomEngineEmitter,
  CustomEngineInit,
  CustomEngineInstance,
  CustomEngineRouting,
  CustomEngineTurn,
} from './turn.js';

export interface LoadCustomEngineOptions {
  pack: PackIdentity;
  /** Read only when the engine manifest sets `promptInjection`. */
  systemPrompt?: () => Promise<string | undefined>;
}

type EngineClass = new (init: CustomEngineInit) => CustomEngineInstance;

const WIRE_CODE = /^[a-z][a-z0-9_]{0,63}$/;

function hidden<T extends object>(target: T, key: string, value: unknown): T {
  if (value !== undefined)
    Object.defineProperty(target, key, { value, enumerable: false, writable: false });
  return target;
}

function routingOf(options: EngineRunOptions): CustomEngineRouting {
  const routing: Record<string, unknown> = { useLiteLLM: options.baseUrl !== undefined };
  if (options.baseUrl !== undefined) routing.baseUrl = options.baseUrl;
  return Object.freeze(
    hidden(routing, 'apiKey', options.modelToken),
  ) as unknown as CustomEngineRouting;
}

function routingKey(options: EngineRunOptions): string {
  return createHash('sha256')
    .update(JSON.stringify([options.baseUrl ?? null, options.modelToken ?? null]))
    .digest('hex');
}

/** Turns whatever an engine reports as an error into one the host maps to `failed`. */
function toFailure(value: unknown): Error {
  if (value instanceof Error) return value;
  if (typeof value === 'string') return new Error(value);
  const candidate = value as { code?: unknown; message?: unknown; retryable?: unknown } | null;
  const error = new Error(
    candidate !== null && typeof candidate === 'object' && typeof candidate.message === 'string'
      ? candidate.message
      : 'the engine reported an error',
  ) as Error & { code?: string; retryable?: boolean };
  if (candidate !== null && typeof candidate === 'object') {
    if (typeof candidate.code === 'string' && WIRE_CODE.test(candidate.code))
      error.code = candidate.code;
    if (candidate.retryable === true) error.retryable = true;
  }
  return error;
}

/**
 * Loads an AgentHippo Custom Engine V2 from its folder: `engine.manifest.json` and the ES module
 * it names. The class is instantiated lazily, and again whenever a run's `baseUrl` or
 * `modelToken` differs from the last one (credential rotation); the old instance is disposed.
 */
export async function loadCustomEngine(
  engineDir: string,
  options: LoadCustomEngineOptions,
): Promise<PackEngine> {
  const { manifest, dir, entryPath } = await loadCustomEngineManifest(engineDir);
  let moduleNamespace: Record<string, unknown>;
  try {
    moduleNamespace = (await import(pathToFileURL(entryPath).href)) as Record<string, unknown>;
  } catch (cause) {
    throw new EngineError(
      'ERR_ENGINE_LOAD',
      `engine ${manifest.id}: importing ${entryPath} failed: ${(cause as Error).message}`,
      { cause },
    );
  }
  const exported = moduleNamespace[manifest.engineExport];
  if (
    typeof exported !== 'function' ||
    typeof (exported as { prototype?: { run?: unknown } }).prototype?.run !== 'function'
  ) {
    throw new EngineError(
      'ERR_ENGINE_LOAD',
      `engine ${manifest.id}: ${entryPath} must export a class ${manifest.engineExport} with a run(turn) method`,
    );
  }
  const Engine = exported as EngineClass;
  const systemPrompt =
    manifest.promptInjection === true ? await options.systemPrompt?.() : undefined;
  const { pack } = options;
  let current: { key: string; instance: CustomEngineInstance } | undefined;

  async function disposeCurrent(log: (message: string) => void): Promise<void> {
    const previous = current;
    current = undefined;
    if (previous === undefined) return;
    try {
      await previous.instance.dispose?.();
    } catch (error) {
      log(`dispose of engine ${manifest.id} failed: ${(error as Error).message}`);
    }
  }

  async function instanceFor(
    runOptions: EngineRunOptions,
    runtime: EngineRuntime,
    emitter: EngineEmitter,
  ): Promise<CustomEngineInstance> {
    const key = routingKey(runOptions);
    if (current?.key === key) return current.instance;
    await disposeCurrent((message) => emitter.log('warn', message));
    const init: CustomEngineInit = Object.freeze({
      engineDir: dir,
      manifest: Object.freeze({ ...manifest }),
      routing: routingOf(runOptions),
      agent: Object.freeze({ id: pack.id, version: pack.version }),
      stateDir: runtime.stateDir,
    });
    try {
      current = { key, instance: new Engine(init) };
    } catch (cause) {
      throw new EngineError(
        'ERR_ENGINE_LOAD',
        `engine ${manifest.id}: constructing ${manifest.engineExport} failed: ${(cause as Error).message}`,
        { cause },
      );
    }
    return current.instance;
  }

  return {
    id: manifest.id,
    displayName: typeof manifest.displayName === 'string' ? manifest.displayName : manifest.id,
    async stream(message, runOptions, emitter, runtime, signal) {
      const instance = await instanceFor(runOptions, runtime, emitter);
      let failure: Error | undefined;
      const turnEmitter: CustomEngineEmitter = {
        text: (delta) => emitter.text(String(delta)),
        thinking: (delta) => emitter.thinking(String(delta)),
        toolStart: (event) => emitter.toolStart(event),
        toolEnd: (event) => emitter.toolEnd(event),
        progress: (text) => emitter.progress(String(text)),
        question: (request) => emitter.question(request),
        warning: (code, text) => emitter.warning(code, text),
        session: (nativeSessionId) => emitter.session(nativeSessionId),
        log: (level, text) => emitter.log(level, text),
        error: async (error) => {
          failure ??= toFailure(error);
        },
        done: async (result) => {
          if (typeof result?.nativeSessionId === 'string' && result.nativeSessionId !== '')
            await emitter.session(result.nativeSessionId);
        },
      };
      const logger = {
        debug: (text: string) => emitter.log('debug', text),
        info: (text: string) => emitter.log('info', text),
        warn: (text: string) => emitter.log('warn', text),
        error: (text: string) => emitter.log('error', text),
      };
      const turn: Record<string, unknown> = {
        message,
        modelId: runOptions.modelId ?? manifest.model ?? pack.model,
        workspaceRoot: runtime.workspaceRoot,
        additionalDirectories: Object.freeze([...(runOptions.additionalDirectories ?? [])]),
        permissions: Object.freeze({
          fileAccess: effectiveFileAccess(runOptions.permissions?.fileAccess, pack.fileAccess),
        }),
        routing: routingOf(runOptions),
        session: Object.freeze({
          ...(runOptions.sessionId !== undefined ? { sessionId: runOptions.sessionId } : {}),
          ...(runOptions.nativeSessionId !== undefined
            ? { nativeSessionId: runOptions.nativeSessionId }
            : {}),
        }),
        agent: Object.freeze({ id: pack.id, version: pack.version }),
        ...(systemPrompt !== undefined ? { systemPrompt } : {}),
        emitter: Object.freeze(turnEmitter),
        runtime: Object.freeze({ logger: Object.freeze(logger), stateDir: runtime.stateDir }),
        signal,
      };
      hidden(turn, 'env', Object.freeze({ ...(runOptions.turnEnv ?? {}) }));
      const result = (await instance.run(Object.freeze(turn) as unknown as CustomEngineTurn)) as
        | {
            nativeSessionId?: unknown;
          }
        | null
        | undefined;
      if (failure !== undefined) throw failure;
      if (
        result !== null &&
        typeof result === 'object' &&
        typeof result.nativeSessionId === 'string' &&
        result.nativeSessionId !== ''
      ) {
        await emitter.session(result.nativeSessionId);
      }
    },
    async dispose() {
      await disposeCurrent(() => {});
    },
  };
}
