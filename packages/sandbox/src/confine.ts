import { existsSync, lstatSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  BUILT_IN_ENGINES,
  CUSTOM_ENGINE_MANIFEST_FILE,
  engineCliFolders,
  type LoadPackEngineOptions,
  type SdkEngineId,
} from '@packwarden/engines';
import type { AgentManifest } from '@packwarden/pack-manifest';
import { VERIFIED_ENGINES_DIR } from './engine-admission.js';
import {
  createConfinement,
  type Confinement,
  type GuaranteeStatus,
  type IsolationMode,
} from './isolation/index.js';
import type { ProbeOutcome } from './isolation/probe.js';
import type { SandboxState } from './state.js';

export const ISOLATION_MODES: readonly IsolationMode[] = Object.freeze(['required', 'auto', 'off']);

/**
 * Engines whose CLI talks to the run's model server through a host-side gateway of its own
 * (engines README, "Model credentials"): inside the walls they reach only that gateway, whose
 * origin the engine admits per turn; the run's `baseUrl` itself is never admitted for them.
 */
export const GATEWAY_ENGINES: ReadonlySet<string> = new Set(['claude', 'codex']);

/**
 * Host folders the engine's code runs from that confinement must show read-only: the claude /
 * codex CLI packages (`engineCliFolders`), or an engine installed under the sandbox's own
 * `PACKWARDEN_HOME` (`<state>/packwarden/engines/<id>`) with its verified copy
 * (`<state>/verified-engines/<id>`, the one that loads under a required signature:
 * docs/sandbox.md, "What may load"). A missing SDK yields nothing here: loading the
 * engine then fails with its own error.
 */
function engineFolders(
  engine: string,
  packDir: string,
  state: SandboxState,
  engineHome: string,
): string[] {
  if (GATEWAY_ENGINES.has(engine)) {
    try {
      return engineCliFolders(engine as SdkEngineId);
    } catch {
      return [];
    }
  }
  if (engine === '' || BUILT_IN_ENGINES.includes(engine)) return [];
  // The pack's own engine is what loads only when its folder holds the engine manifest, the
  // loader's own test (installed-engine.ts): a folder without one (an empty folder is no digest
  // entry, so one can be added to a signed pack) left the installed engine unmounted, and so
  // unable to start inside the walls.
  if (isFile(join(packDir, 'engines', engine, CUSTOM_ENGINE_MANIFEST_FILE))) return [];
  const installed = join(engineHome, 'engines', engine);
  if (!existsSync(installed)) return [];
  // Under a required signature the engine loads from its verified copy, made after the walls
  // are set up (engine-admission.ts): its folder is bound now, by path, and filled before any
  // engine child starts.
  const verified = join(state.stateDir, VERIFIED_ENGINES_DIR, engine);
  mkdirSync(verified, { recursive: true, mode: 0o700 });
  return [installed, verified];
}

function isFile(path: string): boolean {
  try {
    return lstatSync(path).isFile();
  } catch {
    return false;
  }
}

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
  input: { packDir: string; manifest: AgentManifest; state: SandboxState; engineHome?: string },
  env: Record<string, string | undefined>,
  probe?: Promise<ProbeOutcome>,
): Promise<SandboxConfinement> {
  const { manifest, state } = input;
  const engine = manifest.spec.engine ?? '';
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
    {
      mode,
      env,
      ...(probe === undefined ? {} : { probe }),
      runtimeParent: state.stateDir,
      readOnlyPaths:
        mode === 'off'
          ? []
          : engineFolders(engine, input.packDir, state, input.engineHome ?? state.packwardenHome),
    },
  );
  const missing: GuaranteeStatus[] = confinement.guarantees.filter(
    (guarantee) => guarantee.status === 'unavailable',
  );
  const wrapEngine = mode !== 'off' && confinement.guarantees.some((g) => g.status === 'enforced');
  const engineOptions = GATEWAY_ENGINES.has(engine)
    ? gatewayEngineOptions(engine as SdkEngineId, confinement, wrapEngine)
    : undefined;
  const result: SandboxConfinement = {
    confinement,
    wrapEngine,
    ...(engineOptions !== undefined ? { engineOptions } : {}),
  };
  if (mode === 'off' || missing.length === 0) return result;
  return {
    ...result,
    degraded: `isolation is degraded: ${missing
      .map((guarantee) => `${guarantee.id} is not enforced (${guarantee.reason ?? 'unavailable'})`)
      .join('; ')}`,
  };
}

/**
 * The claude / codex engine inside the walls (docs/sandbox.md, "Confinement"): each turn's
 * host-side model gateway is admitted through the proxy for that turn only, and only when the
 * walls enforce `fs-write` do the engines lean on them (claude may run Bash in the workspace;
 * codex runs without its own sandbox, which cannot start inside bubblewrap).
 */
function gatewayEngineOptions(
  engine: SdkEngineId,
  confinement: Confinement,
  wrapped: boolean,
): Pick<LoadPackEngineOptions, 'claude' | 'codex'> {
  const writesWalled =
    wrapped && confinement.guarantees.some((g) => g.id === 'fs-write' && g.status === 'enforced');
  return {
    [engine]: {
      confinedWrites: writesWalled,
      ...(wrapped ? { onModelOrigin: (origin: string) => confinement.admitOrigin(origin) } : {}),
      // codex starts through a launcher script the host runs: written where no confined
      // command can rewrite it (never the engine state folder, which the walls make writable).
      ...(engine === 'codex' && wrapped && confinement.privateDir !== undefined
        ? { launcherDir: confinement.privateDir }
        : {}),
    },
  };
}
