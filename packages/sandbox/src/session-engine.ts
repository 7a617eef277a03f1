import { resolve } from 'node:path';
import type { EngineRuntime, PackEngine } from '@packwarden/engines';
import {
  runSecretValues,
  type EngineRunOptions,
  type KillRequest,
  type RunnerEngine,
  type SecretSet,
} from '@packwarden/runner-host';
import { SandboxError } from './errors.js';
import type { ModelOriginLease } from './model-origin.js';

/** The engine of one session, with its own instance, disposed when the session ends. */
export interface SessionEngine extends RunnerEngine<EngineRuntime> {
  kill(request: KillRequest): void;
  /** The session ended: disposes its instance (a later turn would take a new one). */
  endSession(): Promise<void>;
  dispose(): Promise<void>;
}

/**
 * The engine as one sandbox session sees it. Each session gets its own engine instance (from
 * `take`, called at the first turn), so that a session's credentials rebuild only its own
 * instance and never dispose one another session is using mid-turn (docs/sandbox.md, "Socket
 * mode"). The run's secrets are learned (so stderr can be scrubbed), a different `workspaceRoot`
 * on the wire is ignored with one warning per session, so are `additionalDirectories`, and the
 * process is moved into the workspace before every turn.
 */
export function sessionEngine(
  info: { id: string; displayName: string },
  take: () => Promise<PackEngine>,
  workspace: string,
  secrets: SecretSet,
  confinement: { degraded?: string; modelOrigin?: ModelOriginLease } = {},
): SessionEngine {
  let warned = false;
  let directoriesSaid = false;
  let degradedSaid = false;
  let engine: Promise<PackEngine> | undefined;
  let loaded: PackEngine | undefined;
  const get = () => {
    engine ??= take().then((value) => (loaded = value));
    return engine;
  };
  return {
    id: info.id,
    displayName: info.displayName,
    async stream(message, options, emitter, runtime, signal) {
      // Pinned in the set stderr is scrubbed with while the turn runs, so that no number of runs
      // on other connections can evict this turn's token (the set remembers 256 otherwise); the
      // host scrubs the session's frames with its own set, so one session's "secrets" never
      // censor another session's frames.
      const unpin = secrets.pin(runSecretValues(options));
      try {
        return await streamTurn(message, options, emitter, runtime, signal);
      } finally {
        unpin();
      }
    },
    onMaintenance: async (event, runtime) => {
      await loaded?.onMaintenance?.(event, runtime);
    },
    kill: (request) => loaded?.kill?.(request),
    // The session is over: its instance (a process, for a custom engine) goes with it. A socket
    // server disposes engines only when it closes, so without this every connection ever made
    // would leave its instance running until then, and `maxConnections` would bound nothing.
    endSession: () => dispose(),
    dispose,
  };

  async function streamTurn(
    ...[message, options, emitter, runtime, signal]: Parameters<SessionEngine['stream']>
  ): ReturnType<SessionEngine['stream']> {
    if (
      !warned &&
      options.workspaceRoot !== undefined &&
      resolve(options.workspaceRoot) !== workspace
    ) {
      warned = true;
      await emitter.warning(
        'workspace_root_ignored',
        `the sandbox works in its own workspace ${workspace}; the run frame's workspaceRoot ${JSON.stringify(options.workspaceRoot)} is ignored`,
      );
    }
    // The workspace is the only folder a turn is given: engines turn a run frame's
    // `additionalDirectories` into more folders the agent may read and write (claude's
    // permission rules, codex's writable roots), which is a widening no pack declared, asked
    // by whoever can connect (docs/sandbox.md, "Its workspace is authoritative").
    if (options.additionalDirectories !== undefined) {
      if (!directoriesSaid && options.additionalDirectories.length > 0) {
        directoriesSaid = true;
        await emitter.warning(
          'additional_directories_ignored',
          `the sandbox gives a turn only its workspace ${workspace}; the run frame's additionalDirectories are ignored`,
        );
      }
      options = withoutAdditionalDirectories(options);
    }
    if (!degradedSaid && confinement.degraded !== undefined) {
      degradedSaid = true;
      await emitter.warning('isolation_degraded', confinement.degraded);
    }
    // The run's model gateway stays reachable through the confinement's proxy, for this turn;
    // another session's turn cannot swap it meanwhile (ERR_MODEL_ORIGIN_BUSY).
    let release: (() => void) | undefined;
    try {
      if (options.baseUrl !== undefined)
        release = confinement.modelOrigin?.acquire(options.baseUrl);
    } catch (error) {
      // On the wire as a retryable `failed{code:"model_origin_busy"}` (frame codes are
      // snake_case: runner-host README, "The protocol").
      if (error instanceof SandboxError && error.code === 'ERR_MODEL_ORIGIN_BUSY')
        throw Object.assign(new Error(error.message), {
          code: 'model_origin_busy',
          retryable: true,
          cause: error,
        });
      throw error;
    }
    try {
      const current = await get();
      process.chdir(workspace);
      return await current.stream(message, options, emitter, runtime, signal);
    } finally {
      release?.();
    }
  }

  async function dispose(): Promise<void> {
    const pending = engine;
    if (pending === undefined) return;
    engine = undefined;
    loaded = undefined;
    const current = await pending.catch(() => undefined);
    await current?.dispose?.();
  }
}

/** The run's options without `additionalDirectories`; its secrets stay hidden (non-enumerable). */
function withoutAdditionalDirectories(options: EngineRunOptions): EngineRunOptions {
  const descriptors: PropertyDescriptorMap = Object.getOwnPropertyDescriptors(options);
  delete descriptors.additionalDirectories;
  return Object.freeze(Object.defineProperties({}, descriptors)) as EngineRunOptions;
}
