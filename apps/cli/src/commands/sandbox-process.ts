import { mkdir, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { SecretSet } from '@packwarden/runner-host';

/** Where the sandbox keeps everything writable. */
export interface SandboxState {
  stateDir: string;
  home: string;
  packwardenHome: string;
  workspace: string;
}

const CREDENTIAL_VARIABLES = [
  'PACKWARDEN_MODEL_TOKEN',
  'AGENTHIPPO_MODEL_TOKEN',
  'PACKWARDEN_BASE_URL',
  'AGENTHIPPO_BASE_URL',
];

/**
 * Creates the state layout and points the process at it: HOME, XDG dirs, TMPDIR, npm's cache and
 * PACKWARDEN_HOME all live under the state dir, and PACKWARDEN_SANDBOX=1. Model credentials in
 * the environment are dropped: the sandbox learns them from run frames only.
 */
export async function prepareSandboxState(
  stateDir: string,
  workspace: string | undefined,
  env: NodeJS.ProcessEnv,
): Promise<SandboxState> {
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const root = await realpath(stateDir);
  const dirs = {
    HOME: join(root, 'home'),
    XDG_CACHE_HOME: join(root, 'cache'),
    XDG_CONFIG_HOME: join(root, 'config'),
    XDG_DATA_HOME: join(root, 'data'),
    XDG_STATE_HOME: join(root, 'local-state'),
    TMPDIR: join(root, 'tmp'),
    npm_config_cache: join(root, 'cache', 'npm'),
    PACKWARDEN_HOME: join(root, 'packwarden'),
  };
  for (const dir of Object.values(dirs)) await mkdir(dir, { recursive: true, mode: 0o700 });
  const workspaceDir = workspace ?? join(root, 'workspace');
  await mkdir(workspaceDir, { recursive: true });
  Object.assign(env, dirs, { PACKWARDEN_SANDBOX: '1' });
  delete env.AGENTHIPPO_HOME;
  for (const name of CREDENTIAL_VARIABLES) delete env[name];
  return {
    stateDir: root,
    home: dirs.HOME,
    packwardenHome: dirs.PACKWARDEN_HOME,
    workspace: await realpath(workspaceDir),
  };
}

type WriteCallback = (error?: Error | null) => void;

/**
 * Makes the protocol the only writer of stdout: returns a stream over the real stdout for the
 * host, and sends everything else written to process.stdout (console.log of an in-process
 * engine included) to stderr. Everything reaching stderr is scrubbed of the secrets seen so far.
 */
export function takeOverStdio(secrets: SecretSet): Writable {
  const realStdoutWrite = process.stdout.write.bind(process.stdout) as (
    chunk: Uint8Array | string,
    callback: WriteCallback,
  ) => boolean;
  const realStderrWrite = process.stderr.write.bind(process.stderr) as (
    chunk: string,
    callback?: WriteCallback,
  ) => boolean;
  const toStderr = (
    chunk: Uint8Array | string,
    encoding?: BufferEncoding | WriteCallback,
    callback?: WriteCallback,
  ): boolean => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    const done = typeof encoding === 'function' ? encoding : callback;
    return realStderrWrite(secrets.scrubText(text), done);
  };
  process.stderr.write = toStderr as typeof process.stderr.write;
  process.stdout.write = toStderr as typeof process.stdout.write;
  // Write errors (a closed pipe) reach the host through the channel stream below.
  process.stdout.on('error', () => {});
  return new Writable({
    highWaterMark: 64 * 1024,
    write(chunk: Buffer, _encoding, callback) {
      realStdoutWrite(chunk, (error) => callback(error ?? null));
    },
  });
}
