import { mkdir, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { SecretSet, type EngineRunOptions } from '@packwarden/runner-host';
import {
  rootString,
  serverRoot,
  startModelGateway,
  type GatewayCredentialStyle,
  type ModelGateway,
} from './model-gateway.js';
import type { EngineRuntime } from './runtime.js';
import { ensureDirNoFollow, UnsafePathError } from './safe-fs.js';
import type { SdkEngineId } from './sdk-loader.js';

/** A turn failure the runner host turns into `failed` with this `snake_case` code. */
export function turnFailure(code: string, message: string, retryable = false): Error {
  return Object.assign(new Error(message), { code, retryable });
}

/** The message of something thrown, for a failure that names its cause. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The environment of an SDK engine's CLI for one turn: the base environment plus the run's
 * `turnEnv`. Routing variables are set by each engine on top of this, never on argv.
 */
export function sdkChildEnvironment(
  baseEnv: Record<string, string | undefined>,
  runOptions: EngineRunOptions,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(baseEnv)) if (value !== undefined) env[key] = value;
  Object.assign(env, runOptions.turnEnv ?? {});
  return env;
}

/** A controller that aborts with the run's signal (for SDKs that take a controller). */
export function linkedController(signal: AbortSignal): {
  controller: AbortController;
  unlink: () => void;
} {
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal.reason);
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  return { controller, unlink: () => signal.removeEventListener('abort', onAbort) };
}

/**
 * Admits the origin an engine CLI sends model requests to, for one turn; may return the release
 * that ends the admission (called when the turn's route closes).
 */
export type ModelOriginAdmission = (
  origin: string,
) => void | (() => void) | Promise<void | (() => void)>;

/** Where an engine CLI sends its model requests for one turn, and the credential it presents. */
export interface ModelRoute {
  /** The server root the CLI is given (the gateway's when a token is routed), or `undefined`. */
  root: string | undefined;
  /** The credential the CLI is given: the gateway's per-turn placeholder, never the real token. */
  credential: string | undefined;
  /** Whether the run named a model server (`baseUrl`). */
  custom: boolean;
  close(): Promise<void>;
}

/**
 * Opens the model route of one turn (engines README, "Model credentials"). With a token, a
 * host-side gateway on 127.0.0.1 holds it and the CLI gets the gateway's URL and a placeholder:
 * the token never enters the CLI's environment, files or the commands it runs. A named server
 * without a token goes through the gateway too (forwarded without a credential); with neither,
 * the CLI keeps its own default and no credential. An invalid `baseUrl` fails the
 * turn (`base_url_invalid`) before anything starts.
 */
export async function openModelRoute(
  baseUrl: string | undefined,
  token: string | undefined,
  defaultUpstream: string,
  style: GatewayCredentialStyle,
  onModelOrigin?: ModelOriginAdmission,
): Promise<ModelRoute> {
  const route = await openRoute(baseUrl, token, defaultUpstream, style);
  if (route.root !== undefined && onModelOrigin !== undefined) {
    // Confinement lets the CLI reach this origin (the gateway's, new each turn) and no other,
    // until the route closes with the turn.
    try {
      const release = await onModelOrigin(new URL(route.root).origin);
      if (typeof release === 'function') {
        const close = route.close;
        return {
          ...route,
          close: async () => {
            release();
            await close();
          },
        };
      }
    } catch (error) {
      await route.close();
      throw turnFailure(
        'confinement_failed',
        `the model origin could not be allowed: ${errorMessage(error)}`,
      );
    }
  }
  return route;
}

async function openRoute(
  baseUrl: string | undefined,
  token: string | undefined,
  defaultUpstream: string,
  style: GatewayCredentialStyle,
): Promise<ModelRoute> {
  const root = baseUrl === undefined ? undefined : serverRoot(baseUrl);
  if (baseUrl !== undefined && root === undefined) {
    throw turnFailure(
      'base_url_invalid',
      "the run frame's baseUrl is not an http(s) URL without credentials, query or fragment",
    );
  }
  if ((token === undefined || token === '') && root === undefined) {
    return {
      root: root === undefined ? undefined : rootString(root),
      credential: undefined,
      custom: root !== undefined,
      close: async () => {},
    };
  }
  let gateway: ModelGateway;
  try {
    // Without a token, a named server still goes through the gateway: the CLI needs a
    // credential to start (Claude Code: "Not logged in"), and gets only the placeholder.
    gateway = await startModelGateway({
      upstream: root === undefined ? defaultUpstream : rootString(root),
      ...(token !== undefined && token !== '' ? { token } : {}),
      style,
    });
  } catch (error) {
    throw turnFailure(
      'model_gateway_failed',
      `the model gateway did not start: ${errorMessage(error)}`,
    );
  }
  return {
    root: gateway.url,
    credential: gateway.placeholder,
    custom: root !== undefined,
    close: () => gateway.close(),
  };
}

/** What an engine's turn needs to know of its vendor CLI to start it (see {@link openCliTurn}). */
export interface VendorCli {
  /** Where the CLI sends model requests when the run names no server. */
  readonly defaultUpstream: string;
  /** How the CLI presents its credential, so the gateway swaps the right header. */
  readonly credentialStyle: GatewayCredentialStyle;
  /** Variables the CLI takes a model credential from, in its order of preference. */
  readonly tokenEnv: readonly string[];
  /** Every credential variable the CLI would read: none of them reaches it. */
  readonly credentialEnv: readonly string[];
  /** The variable naming the CLI's own folder; unset, it is `<stateDir>/<homeFolder>`. */
  readonly homeEnv: string;
  readonly homeFolder: string;
}

/** One vendor-CLI turn, set up: what {@link openCliTurn} gives the engine. */
export interface CliTurn {
  /** The run's secret values, scrubbed from every failure message of the turn. */
  secrets: SecretSet;
  /** The CLI's environment so far: no credential in it; routing variables are the engine's. */
  env: Record<string, string>;
  /**
   * The CLI's own folder (created), as a real path found without following a link below the
   * state dir; `env` names it under `homeEnv`.
   */
  home: string;
  /** The turn's model route: the engine closes it when the turn ends. */
  route: ModelRoute;
}

/**
 * The steps every vendor-CLI turn starts with (engines README, "Model credentials"): the run's
 * secret values are noted for scrubbing; the CLI's environment is the base one plus `turnEnv`
 * without a credential variable, and its own folder is in the state dir unless the environment
 * names one; a credential found there goes through the gateway like the run's token, which wins.
 */
export async function openCliTurn(
  cli: VendorCli,
  runOptions: EngineRunOptions,
  runtime: EngineRuntime,
  options: {
    baseEnv: Record<string, string | undefined>;
    onModelOrigin?: ModelOriginAdmission | undefined;
  },
): Promise<CliTurn> {
  const secrets = new SecretSet();
  secrets.addRun(runOptions);

  const env = sdkChildEnvironment(options.baseEnv, runOptions);
  let token = runOptions.modelToken;
  for (const name of cli.tokenEnv) token ??= env[name];
  secrets.add(token);
  for (const name of cli.credentialEnv) delete env[name];
  const home = await cliHome(cli, env, runtime.stateDir);
  const route = await openModelRoute(
    runOptions.baseUrl,
    token,
    cli.defaultUpstream,
    cli.credentialStyle,
    options.onModelOrigin,
  );
  return { secrets, env, home, route };
}

/**
 * The CLI's own folder, made if missing. One the environment names is the embedder's choice.
 * The default, `<stateDir>/<homeFolder>`, sits where confined commands write (the engine state
 * folder): one may have replaced it with a link, so the host never follows one there and fails
 * the turn as `engine_state_refused` instead.
 */
async function cliHome(
  cli: VendorCli,
  env: Record<string, string>,
  stateDir: string,
): Promise<string> {
  const named = env[cli.homeEnv];
  if (named !== undefined) {
    await mkdir(named, { recursive: true });
    return realpath(named);
  }
  env[cli.homeEnv] = join(stateDir, cli.homeFolder);
  try {
    return await ensureDirNoFollow(stateDir, [cli.homeFolder]);
  } catch (error) {
    if (error instanceof UnsafePathError) throw turnFailure('engine_state_refused', error.message);
    throw error;
  }
}

/** A failure the CLI reported in its stream (the SDK did not throw). */
export interface ReportedFailure {
  code: string;
  message: string;
}

/**
 * Drives the SDK through one turn, then runs `close` whatever happened. What the SDK throws fails
 * the turn as `<engine>_failed`, the run's secrets scrubbed from its message, unless the run was
 * cancelled: then the turn just ends, and every later step of the engine checks `signal` before
 * it reports anything.
 */
export async function driveCliTurn(
  drive: () => Promise<void>,
  turn: {
    engine: SdkEngineId;
    signal: AbortSignal;
    secrets: SecretSet;
    close: () => Promise<void>;
  },
): Promise<void> {
  try {
    await drive();
  } catch (error) {
    if (turn.signal.aborted) return;
    throw turnFailure(`${turn.engine}_failed`, turn.secrets.scrubText(errorMessage(error)));
  } finally {
    await turn.close();
  }
}

/** Fails the turn with what the CLI reported, its secrets scrubbed, unless the run was cancelled. */
export function throwReportedFailure(
  reported: ReportedFailure | undefined,
  signal: AbortSignal,
  secrets: SecretSet,
): void {
  if (!signal.aborted && reported !== undefined) {
    throw turnFailure(reported.code, secrets.scrubText(reported.message));
  }
}
