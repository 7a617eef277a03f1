import { mkdir, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { SandboxError } from './errors.js';

/** Where the sandbox keeps everything writable (docs/sandbox.md, "All writable state"). */
export interface SandboxState {
  stateDir: string;
  /**
   * `<state>/engine`: the only part of the state pack code may see and write (HOME, TMPDIR, XDG
   * dirs, npm's cache, engines' own state). The frame socket, `<state>/packwarden`, the verified
   * pack copy and the confinement's runtime folder stay outside it (docs/sandbox.md, "State").
   */
  engineDir: string;
  home: string;
  /** `<state>/packwarden`: the sandbox's own `PACKWARDEN_HOME`. Writable by pack code: never verified. */
  packwardenHome: string;
  workspace: string;
  /** The variables pointing HOME, XDG dirs, TMPDIR, npm's cache and PACKWARDEN_HOME at the state. */
  env: Readonly<Record<string, string>>;
}

/** Model credentials a sandbox never takes from its environment: run frames bring them. */
export const CREDENTIAL_VARIABLES: readonly string[] = Object.freeze([
  'PACKWARDEN_MODEL_TOKEN',
  'AGENTHIPPO_MODEL_TOKEN',
  'PACKWARDEN_BASE_URL',
  'AGENTHIPPO_BASE_URL',
]);

async function makeDir(path: string, mode?: number): Promise<void> {
  try {
    await mkdir(path, { recursive: true, ...(mode !== undefined ? { mode } : {}) });
  } catch (cause) {
    throw new SandboxError('ERR_STATE_DIR', `cannot create ${path}: ${(cause as Error).message}`, {
      cause,
    });
  }
}

/** Creates the state layout (and the workspace). Changes nothing outside the two folders. */
export async function createSandboxState(
  stateDir: string,
  workspace: string | undefined,
): Promise<SandboxState> {
  await makeDir(stateDir, 0o700);
  const root = await realpath(stateDir);
  const engineDir = join(root, 'engine');
  await makeDir(engineDir, 0o700);
  const env = {
    HOME: join(engineDir, 'home'),
    XDG_CACHE_HOME: join(engineDir, 'cache'),
    XDG_CONFIG_HOME: join(engineDir, 'config'),
    XDG_DATA_HOME: join(engineDir, 'data'),
    XDG_STATE_HOME: join(engineDir, 'local-state'),
    TMPDIR: join(engineDir, 'tmp'),
    npm_config_cache: join(engineDir, 'cache', 'npm'),
    PACKWARDEN_HOME: join(root, 'packwarden'),
    PACKWARDEN_SANDBOX: '1',
  };
  for (const [name, dir] of Object.entries(env))
    if (name !== 'PACKWARDEN_SANDBOX') await makeDir(dir, 0o700);
  const workspaceDir = workspace ?? join(root, 'workspace');
  await makeDir(workspaceDir);
  return {
    stateDir: root,
    engineDir,
    home: env.HOME,
    packwardenHome: env.PACKWARDEN_HOME,
    workspace: await realpath(workspaceDir),
    env: Object.freeze(env),
  };
}

/**
 * Points a process environment at the state: HOME, XDG dirs, TMPDIR, npm's cache and
 * PACKWARDEN_HOME, `PACKWARDEN_SANDBOX=1`; drops model credentials and `AGENTHIPPO_HOME`.
 */
export function applyStateEnvironment(env: NodeJS.ProcessEnv, state: SandboxState): void {
  Object.assign(env, state.env);
  delete env.AGENTHIPPO_HOME;
  for (const name of CREDENTIAL_VARIABLES) delete env[name];
}
