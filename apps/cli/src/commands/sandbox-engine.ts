import { resolve } from 'node:path';
import type { EngineRuntime, PackEngine } from '@packwarden/engines';
import type { RunnerEngine, SecretSet } from '@packwarden/runner-host';

/**
 * The engine as one sandbox session sees it: the run's secrets are learned (so stderr can be
 * scrubbed), a different `workspaceRoot` on the wire is ignored with one warning per session,
 * and the process is moved into the workspace before every turn. Disposal is the sandbox's:
 * the engine outlives sessions in socket mode.
 */
export function sessionEngine(
  engine: PackEngine,
  workspace: string,
  secrets: SecretSet,
): RunnerEngine<EngineRuntime> {
  let warned = false;
  return {
    id: engine.id,
    displayName: engine.displayName,
    async stream(message, options, emitter, runtime, signal) {
      secrets.add(options.modelToken);
      secrets.add(options.gatewaySessionKey);
      for (const value of Object.values(options.turnEnv ?? {})) secrets.add(value);
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
      process.chdir(workspace);
      return engine.stream(message, options, emitter, runtime, signal);
    },
    ...(engine.onMaintenance !== undefined
      ? {
          onMaintenance: (event, runtime) => engine.onMaintenance?.(event, runtime),
        }
      : {}),
  };
}
