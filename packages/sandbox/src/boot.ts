import { join } from 'node:path';
import { loadPackEngine, type LoadPackEngineOptions, type PackEngine } from '@packwarden/engines';
import { loadPackManifest, resolvePack, type AgentManifest } from '@packwarden/pack-manifest';
import { verifyPack, type PackVerified } from '@packwarden/pack-signature';
import { selectTrustedKey, type PackTrustRoot } from '@packwarden/trust-root';
import { engineAdmission } from './engine-admission.js';
import type { SandboxConfinement } from './confine.js';
import type { Confinement } from './isolation/index.js';
import { SandboxError } from './errors.js';
import { assertNoOverlap, replaceWithCopy } from './pack-copy.js';
import type { SandboxState } from './state.js';

export type SandboxLogger = (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;

export interface BootPackOptions {
  /** A pack folder, or the name of a pack installed in `env`'s PACKWARDEN_HOME or `./.packwarden/agents/`. */
  agent: string;
  cwd: string;
  /** The environment pack names resolve in (the sandbox's, pointed at its state). */
  env: Record<string, string | undefined>;
  state: SandboxState;
  requireSigned: boolean;
  trustRoot: () => Promise<PackTrustRoot>;
  /** The environment every engine child starts from (already allow-listed). */
  engineEnv: Record<string, string>;
  /**
   * The `PACKWARDEN_HOME` whose `engines/<id>/` holds installed engines. Default the sandbox's own
   * `<state>/packwarden`. Under a required signature an engine found there loads only from its
   * verified copy (docs/sandbox.md, "What may load").
   */
  engineHome?: string;
  /** Kill grace of `exec` commands after a cancel. */
  execKillGraceMs: number;
  /**
   * Sets up confinement once the verified manifest is known and before any engine code loads;
   * its `wrap` rewrites every engine child. Absent: no confinement.
   */
  confine?: (input: { packDir: string; manifest: AgentManifest }) => Promise<SandboxConfinement>;
  /** Custom engines: logs that belong to no run. */
  onEngineLog?: (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;
  log: SandboxLogger;
}

export interface BootedPack {
  /** The folder engines load from: the verified copy under `<state>/pack` when a signature is required. */
  packDir: string;
  manifest: AgentManifest;
  /** The verification of that copy, when a signature was required. */
  verification?: PackVerified;
  /** The confinement every engine child runs in (close it when the sandbox ends). */
  confinement?: Confinement;
  /** What confinement does not enforce (the `isolation_degraded` warning); absent when all is. */
  degraded?: string;
  /** The engine's id and display name (for `welcome`). */
  engine: { id: string; displayName: string };
  /** A new engine for the pack (one per session), under the rule of what may load. */
  createEngine(): Promise<PackEngine>;
}

/**
 * Finds, (copies and verifies,) syncs and loads the pack: every failure here is a boot failure
 * and happens before any pack code runs. With a signature required the source is read once:
 * copied into `<state>/pack`, and only that copy is verified, synced and loaded.
 */
export async function bootPack(options: BootPackOptions): Promise<BootedPack> {
  const { state, log } = options;
  const resolved = await resolvePack(options.agent, { cwd: options.cwd, env: options.env });
  let packDir = resolved.dir;
  let verification: PackVerified | undefined;
  if (options.requireSigned) {
    packDir = await replaceWithCopy(resolved.dir, state.stateDir, ['pack'], 'the verified copy');
    const root = await options.trustRoot();
    const result = await verifyPack(packDir, {
      selectKey: (kid, at) => selectTrustedKey(root, kid, { at }),
    });
    if (result.kind !== 'verified') {
      throw new SandboxError(
        'ERR_SIGNATURE_REFUSED',
        `the pack's signature was refused (${result.kind}): ${result.message.split('\n')[0] ?? ''}`,
        { verification: result },
      );
    }
    verification = result;
    log('info', `verified ${result.pack}@${result.packVersion}, signed by ${result.kid}`);
  }
  const { manifest } = loadPackManifest(packDir);
  const segments = ['.packwarden', 'agents', manifest.metadata.name];
  // The source the user named must not be touched by the sync either (signed mode syncs the copy).
  await assertNoOverlap(resolved.dir, join(state.workspace, ...segments), 'the workspace sync');
  await replaceWithCopy(packDir, state.workspace, segments, 'the workspace sync');

  // Confinement is decided before any engine code loads, from the verified manifest.
  const confined = await options.confine?.({ packDir, manifest });
  const confinement = confined?.confinement;
  try {
    const loadOptions: LoadPackEngineOptions = {
      packDir,
      manifest,
      home: options.engineHome ?? state.packwardenHome,
      env: options.engineEnv,
      // An exec command that ignores SIGTERM is killed well before the host gives up on it.
      exec: { killGraceMs: options.execKillGraceMs },
      admit: engineAdmission({
        requireSigned: options.requireSigned,
        stateDir: state.stateDir,
        trustRoot: options.trustRoot,
      }),
      ...(confinement !== undefined && confined?.wrapEngine === true
        ? { wrap: confinement.wrap }
        : {}),
      ...confined?.engineOptions,
      ...(options.onEngineLog !== undefined ? { onLog: options.onEngineLog } : {}),
    };
    const createEngine = () => loadPackEngine(loadOptions);
    // Load once now, so that a missing or refused engine fails the boot, not the first turn.
    const spare: PackEngine = await createEngine();
    const result = booted(packDir, manifest, verification, confinement, spare, createEngine);
    return confined?.degraded !== undefined ? { ...result, degraded: confined.degraded } : result;
  } catch (error) {
    await confinement?.close();
    throw error;
  }
}

function booted(
  packDir: string,
  manifest: AgentManifest,
  verification: PackVerified | undefined,
  confinement: Confinement | undefined,
  first: PackEngine,
  createEngine: () => Promise<PackEngine>,
): BootedPack {
  let spare: PackEngine | undefined = first;
  return {
    packDir,
    manifest,
    ...(confinement !== undefined ? { confinement } : {}),
    ...(verification !== undefined ? { verification } : {}),
    engine: { id: first.id, displayName: first.displayName },
    async createEngine() {
      const engine = spare ?? (await createEngine());
      spare = undefined;
      return engine;
    },
  };
}
