import type { LoadPackEngineOptions } from '@packwarden/engines';
import type { AgentManifest } from '@packwarden/pack-manifest';
import { SandboxError } from './errors.js';
import {
  createConfinement,
  type Confinement,
  type GuaranteeStatus,
  type IsolationMode,
} from './isolation/index.js';
import type { SandboxState } from './state.js';

export const ISOLATION_MODES: readonly IsolationMode[] = Object.freeze(['required', 'auto', 'off']);

/**
 * Engines whose children the sandbox cannot confine yet: under `required` they refuse boot, under
 * `auto` they run unconfined and are reported (docs/sandbox.md, "Confinement"). The claude and
 * codex CLIs can start through the wrapper (engines README), but the sandbox does not yet make
 * the CLIs' package folders visible inside the walls nor admit their host-side model gateway
 * through the proxy, so a wrapped CLI would fail to start or to reach its model.
 */
const UNCONFINABLE_ENGINES: ReadonlySet<string> = new Set(['claude', 'codex']);

/**
 * `spec.permissions.network.allow` of the verified manifest, typed and already checked by the
 * manifest schema (pack-manifest README, "Network"); confinement parses each origin again.
 */
function allowedOrigins(manifest: AgentManifest): string[] {
  return [...(manifest.spec.permissions?.network?.allow ?? [])];
}

export interface SandboxConfinement {
  confinement: Confinement;
  /** Whether the engine's children start through `confinement.wrap` (false: unconfined). */
  wrapEngine: boolean;
  /** What is not enforced, one line for the `isolation_degraded` warning; undefined when all is. */
  degraded?: string;
  /** Engine options that follow from the confinement (e.g. the claude / codex walls); spread into the loader's. */
  engineOptions?: Pick<LoadPackEngineOptions, 'claude' | 'codex'>;
}

/**
 * The confinement of one sandbox, from the verified manifest (docs/sandbox.md, "Confinement"):
 * the pack copy read-only, the workspace writable only when `fileAccess` allows, `<state>/engine`
 * as the engine's own writable state, and the allowed origins. `required` throws
 * `ERR_ISOLATION_UNAVAILABLE` before any pack code runs when a guarantee cannot be enforced.
 */
export async function confineSandbox(
  mode: IsolationMode,
  input: { packDir: string; manifest: AgentManifest; state: SandboxState },
  env: Record<string, string | undefined>,
): Promise<SandboxConfinement> {
  const { manifest, state } = input;
  const confinement = await createConfinement(
    {
      packDir: input.packDir,
      workspace: state.workspace,
      // Only `<state>/engine`: the frame socket and `<state>/packwarden` (installed engines) sit
      // beside it, never inside what pack code sees (docs/sandbox.md, "State").
      engineStateDir: state.engineDir,
      fileAccess: manifest.spec.permissions?.fileAccess ?? 'read-only',
      allowOrigins: allowedOrigins(manifest),
    },
    // The runtime folder (one-use environment files, the proxy socket) lives at the state root:
    // os.tmpdir() is the engine's TMPDIR by now, which pack code can write.
    { mode, env, runtimeParent: state.stateDir },
  );
  const missing: GuaranteeStatus[] = confinement.guarantees.filter(
    (guarantee) => guarantee.status === 'unavailable',
  );
  const engine = manifest.spec.engine ?? '';
  if (mode !== 'off' && UNCONFINABLE_ENGINES.has(engine)) {
    if (mode === 'required') {
      await confinement.close();
      throw new SandboxError(
        'ERR_ISOLATION_UNAVAILABLE',
        `isolation is required but the ${engine} engine cannot be confined yet (its CLI does not start through the confinement wrapper); use --isolation auto or off`,
      );
    }
    return {
      confinement,
      wrapEngine: false,
      degraded: `the ${engine} engine runs unconfined (it cannot be confined yet)`,
    };
  }
  const wrapEngine = mode !== 'off';
  if (mode === 'off' || missing.length === 0) return { confinement, wrapEngine };
  return {
    confinement,
    wrapEngine,
    degraded: `isolation is degraded: ${missing
      .map((guarantee) => `${guarantee.id} is not enforced (${guarantee.reason ?? 'unavailable'})`)
      .join('; ')}`,
  };
}
