import type { EngineRunOptions } from '@packwarden/runner-host';
import {
  rootString,
  serverRoot,
  startModelGateway,
  type GatewayCredentialStyle,
  type ModelGateway,
} from './model-gateway.js';

/** A turn failure the runner host turns into `failed` with this `snake_case` code. */
export function turnFailure(code: string, message: string, retryable = false): Error {
  return Object.assign(new Error(message), { code, retryable });
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
        `the model origin could not be allowed: ${error instanceof Error ? error.message : String(error)}`,
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
      `the model gateway did not start: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return {
    root: gateway.url,
    credential: gateway.placeholder,
    custom: root !== undefined,
    close: () => gateway.close(),
  };
}
