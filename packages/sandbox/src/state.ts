import { lstatSync, mkdirSync, realpathSync } from 'node:fs';
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

// Synchronous calls: the layout is a dozen folders made before the sandbox serves anyone, and a
// trip through the thread pool for each was event-loop idle in every boot (issue 14, bench/boot).
function makeDir(path: string, mode?: number): void {
  try {
    mkdirSync(path, { recursive: true, ...(mode !== undefined ? { mode } : {}) });
  } catch (cause) {
    throw new SandboxError('ERR_STATE_DIR', `cannot create ${path}: ${(cause as Error).message}`, {
      cause,
    });
  }
}

/**
 * Makes a folder of `<state>/engine`, which pack code can write: whatever it left there at an
 * earlier boot is not trusted. A symlink (or anything but a folder) where a folder of the layout
 * belongs is refused, never followed: the sandbox's own HOME and TMPDIR would otherwise lead
 * wherever pack code chose (docs/sandbox.md, "All writable state"). The parent is checked first.
 */
function makeEngineDir(path: string): void {
  let info;
  try {
    info = lstatSync(path);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new SandboxError(
        'ERR_STATE_DIR',
        `cannot inspect ${path}: ${(cause as Error).message}`,
        {
          cause,
        },
      );
    }
    makeDir(path, 0o700);
    info = lstatSync(path);
  }
  if (!info.isDirectory()) {
    throw new SandboxError(
      'ERR_UNSAFE_PATH',
      `refusing to use ${path}: it is ${info.isSymbolicLink() ? 'a symlink' : 'not a folder'}, left in the state by pack code or another process; the sandbox never follows a link it did not create (remove it, or start from a fresh --state-dir)`,
    );
  }
}

/** Creates the state layout (and the workspace). Changes nothing outside the two folders. */
export async function createSandboxState(
  stateDir: string,
  workspace: string | undefined,
): Promise<SandboxState> {
  makeDir(stateDir, 0o700);
  const root = realpathSync(stateDir);
  const engineDir = join(root, 'engine');
  makeEngineDir(engineDir);
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
  // In this order, each folder's parent first (cache before cache/npm).
  for (const [name, dir] of Object.entries(env)) {
    if (name === 'PACKWARDEN_SANDBOX') continue;
    if (name === 'PACKWARDEN_HOME') makeDir(dir, 0o700);
    else makeEngineDir(dir);
  }
  const workspaceDir = workspace ?? join(root, 'workspace');
  makeDir(workspaceDir);
  return {
    stateDir: root,
    engineDir,
    home: env.HOME,
    packwardenHome: env.PACKWARDEN_HOME,
    workspace: realpathSync(workspaceDir),
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
