import { randomUUID } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  lstatSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
// Only `close()` removes its folder through the thread pool: what a confinement reads and makes
// when it starts (a few folders and small files, before any pack code runs) uses synchronous
// calls, each a thread-pool trip the boot waited for otherwise (issue 14, bench/boot).
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WrappableCommand } from '@packwarden/engines';
import { SandboxError } from '../errors.js';
import { isWithin } from '../pack-copy.js';
import { buildSandboxArgs, findSockets, SANDBOX_ENV_DIR } from './bwrap-args.js';
import {
  environmentScript,
  LAUNCH_SCRIPT,
  RELAY_PERL_SOURCE,
  RELAY_PORT,
  RELAY_SOURCE,
} from './launcher.js';
import { ISOLATION_LIMITS } from './limits.js';
import { parseAllowedOrigin, type AllowedOrigin } from './origins.js';
import { probeIsolation, type ProbeOutcome } from './probe.js';
import { startHostProxy, type HostProxy } from './proxy.js';
import {
  GUARANTEE_IDS,
  type Confinement,
  type ConfinementPolicy,
  type CreateConfinementOptions,
  type GuaranteeStatus,
} from './types.js';

const MODES = new Set(['required', 'auto', 'off']);
const FILE_ACCESS = new Set(['read-only', 'workspace-write', 'full']);

function policyError(message: string, cause?: unknown): SandboxError {
  return new SandboxError('ERR_ISOLATION_POLICY_INVALID', message, { cause });
}

interface ResolvedPolicy {
  readOnlyPaths: string[];
  packDir: string;
  workspace: string;
  engineStateDir: string;
  workspaceWritable: boolean;
  allowed: AllowedOrigin[];
}

async function resolveFolder(label: string, path: unknown, fileOk = false): Promise<string> {
  if (typeof path !== 'string' || !path.startsWith('/'))
    throw policyError(`${label} must be an absolute path`);
  let real: string;
  try {
    real = realpathSync(path);
    const info = statSync(real);
    if (!info.isDirectory() && !(fileOk && info.isFile())) throw new Error('not a folder');
  } catch (error) {
    throw policyError(`${label} ${path} is not a usable folder`, error);
  }
  // Binding `/` would show the whole host: the guarantee `fs-read` would mean nothing.
  if (real === '/') throw policyError(`${label} cannot be the root folder`);
  return real;
}

async function resolvePolicy(
  policy: ConfinementPolicy,
  extra: readonly string[] = [],
): Promise<ResolvedPolicy> {
  if (typeof policy !== 'object' || policy === null) throw policyError('policy must be an object');
  if (!FILE_ACCESS.has(policy.fileAccess))
    throw policyError(`fileAccess must be read-only, workspace-write or full`);
  if (
    !Array.isArray(policy.allowOrigins) ||
    policy.allowOrigins.length > ISOLATION_LIMITS.maxAllowOrigins
  )
    throw policyError(
      `allowOrigins must be a list of at most ${ISOLATION_LIMITS.maxAllowOrigins} origins`,
    );
  const allowed = policy.allowOrigins.map((entry) => parseAllowedOrigin(entry));
  const packDir = await resolveFolder('packDir', policy.packDir);
  const workspace = await resolveFolder('workspace', policy.workspace);
  const engineStateDir = await resolveFolder('engineStateDir', policy.engineStateDir);
  // The same folder bound twice takes the later mode: a pack that is its own workspace would
  // become writable. Nesting is fine (the deeper mount keeps its own mode).
  if (packDir === workspace || packDir === engineStateDir)
    throw policyError('packDir must differ from the workspace and the engine state folder');
  if (!Array.isArray(extra) || extra.length > ISOLATION_LIMITS.maxAllowOrigins)
    throw policyError('readOnlyPaths must be a short list of absolute paths');
  const readOnlyPaths: string[] = [];
  for (const path of extra)
    readOnlyPaths.push(await resolveFolder('readOnlyPaths entry', path, true));
  const resolved: ResolvedPolicy = {
    readOnlyPaths,
    packDir,
    workspace,
    engineStateDir,
    workspaceWritable: policy.fileAccess !== 'read-only',
    allowed,
  };
  assertNothingShownInsideWritable(resolved);
  return resolved;
}

/**
 * bwrap binds every folder of the policy by its host path, again at every command. A folder the
 * walls show that lies inside one they make writable (the pack in `<workspace>/packs/p`, an engine
 * CLI in the workspace's `node_modules`, a workspace under `<state>/engine`) can be swapped by
 * confined code between two commands: it renames a folder on the way and plants a relative link
 * in its place, which leads on the host to a host folder (the bind's source) and inside the new
 * root to a folder that root has (its destination): the next command would see, and for a
 * workspace write, the host's `/tmp`, `/run` (with its sockets) or `/etc`. Checking the paths
 * before each command would leave a race with a confined process still running (another
 * session's), so the layout is refused up front, whatever the depth.
 */
function assertNothingShownInsideWritable(policy: ResolvedPolicy): void {
  const writable: [string, string][] = [
    ['the engine state folder', policy.engineStateDir],
    ...(policy.workspaceWritable ? [['the workspace', policy.workspace] as [string, string]] : []),
  ];
  const shown: [string, string][] = [
    ['the pack folder', policy.packDir],
    ['the workspace', policy.workspace],
    ['the engine state folder', policy.engineStateDir],
    ...policy.readOnlyPaths.map((path): [string, string] => ['the read-only path', path]),
  ];
  for (const [outerLabel, outer] of writable)
    for (const [label, folder] of shown)
      if (folder !== outer && isWithin(folder, outer))
        throw policyError(
          `${label} ${folder} lies inside ${outerLabel} ${outer}, which confined code may write: ` +
            `it could replace a folder on the way with a link, and the next command's walls would ` +
            `show whatever that link leads to. Keep ${label} outside ${outerLabel}` +
            (label === 'the pack folder'
              ? ' (or require a signed pack: its verified copy lives in the state folder)'
              : '') +
            (outerLabel === 'the workspace' ? ', or declare read-only file access' : ''),
        );
}

/**
 * The runtime folder holds what the walls stand on: each command's one-use environment file
 * (its model token, its turnEnv), the proxy socket, and the private folder of host-run helpers
 * (the codex launcher). Inside a folder the walls show (a workspace that holds the state
 * folder, `--workspace .` over `--state-dir ./state`), confined code could read another
 * command's secrets, or rename the folders on the way and have the host write, and run, what it
 * planted. Refused, whatever the folder's mode.
 */
function assertRuntimeOutOfSight(policy: ResolvedPolicy, runtimeParent: string): void {
  let parent = runtimeParent;
  try {
    parent = realpathSync(runtimeParent);
  } catch {
    // Not there yet: creating the runtime folder fails with its own error.
  }
  const visible: [string, string][] = [
    ['the workspace', policy.workspace],
    ['the engine state folder', policy.engineStateDir],
    ['the pack folder', policy.packDir],
    ...policy.readOnlyPaths.map((path): [string, string] => ['the read-only path', path]),
  ];
  for (const [label, folder] of visible)
    if (isWithin(parent, folder))
      throw policyError(
        `${label} ${folder} holds the confinement's runtime folder (under ${parent}), which confined code must never see: keep the state folder outside the workspace and the pack`,
      );
}

function statuses(outcome: ProbeOutcome): GuaranteeStatus[] {
  if (outcome.level === 'none')
    return GUARANTEE_IDS.map((id) => ({ id, status: 'unavailable', reason: outcome.reason }));
  return GUARANTEE_IDS.map((id) =>
    id !== 'network'
      ? { id, status: 'enforced', by: 'bubblewrap' }
      : outcome.level === 'full'
        ? { id, status: 'enforced', by: 'bubblewrap + host proxy' }
        : { id, status: 'unavailable', reason: outcome.networkReason },
  );
}

/** Whether a command of a turn with this file access may write the workspace (policy allowing). */
function writesWorkspace(fileAccess: WrappableCommand['fileAccess']): boolean {
  return fileAccess === undefined || fileAccess === 'workspace-write' || fileAccess === 'full';
}

/** The one-use environment file in each command's own folder (`/run/packwarden-env/env.sh`). */
const ENV_FILE = 'env.sh';

/**
 * Which file the host wrote. The launcher's `rm` ends it; a file of the same name the command
 * writes afterwards is another one (a new inode, or a reused one with a later change time).
 */
interface WrittenFile {
  dev: bigint;
  ino: bigint;
  ctimeNs: bigint;
}

function identityOf(path: string): WrittenFile | undefined {
  const info = lstatSync(path, { bigint: true, throwIfNoEntry: false });
  if (info === undefined || !info.isFile()) return undefined;
  return { dev: info.dev, ino: info.ino, ctimeNs: info.ctimeNs };
}

/**
 * Removes every environment folder of this confinement whose file the launcher already used (the
 * file it sources is gone, or is no longer the one the host wrote), whatever the command left
 * there: the folder is the confinement's, bound writable into one sandbox, so the command may fill
 * it, recreate `env.sh` or plant links, and none of that keeps it. A folder still holding the
 * host's own file belongs to a command that has not started yet and stays. Every folder this
 * confinement made is in `folders` (the parent is never shown to a sandbox), so one sweep visits
 * them all and none waits behind others. `rmSync` removes a link, never what it points to.
 */
function sweepUsedEnvFolders(folders: Map<string, WrittenFile>): void {
  for (const [folder, written] of folders) {
    const now = identityOf(join(folder, ENV_FILE));
    if (
      now !== undefined &&
      now.dev === written.dev &&
      now.ino === written.ino &&
      now.ctimeNs === written.ctimeNs
    )
      continue;
    try {
      rmSync(folder, { recursive: true, force: true });
      folders.delete(folder);
    } catch {
      // Left for the next sweep, and for close(), which removes the whole runtime folder.
    }
  }
}

function offConfinement(mode: 'off' | 'auto', guarantees: GuaranteeStatus[]): Confinement {
  return {
    mode,
    guarantees,
    wrap: (command) => command,
    proxyEvents: [],
    allowModelOrigin: () => {},
    admitOrigin: () => () => {},
    close: async () => {},
  };
}

const RUNTIME_PREFIX = 'pw-confine-';
const OWNER_FILE = 'owner.pid';
/** A runtime folder without an owner file this old was left by a crash before it was written. */
const UNOWNED_GRACE_MS = 60_000;

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether a runtime folder without an owner file was last changed long enough ago to be a crash's. */
function unownedLongEnough(dir: string): boolean {
  try {
    return Date.now() - statSync(dir).mtimeMs >= UNOWNED_GRACE_MS;
  } catch {
    return false;
  }
}

/**
 * Removes the runtime folders a confinement killed without `close()` (SIGKILL, a crash) left in
 * `parent`: those whose owner process is gone (docs/sandbox.md, "State"). A folder of a live
 * sandbox, or one being created right now, is left alone. Best effort: never fails the boot.
 */
async function sweepStaleRuntimes(parent: string): Promise<void> {
  let names: string[];
  try {
    names = readdirSync(parent).filter((name) => name.startsWith(RUNTIME_PREFIX));
  } catch {
    return;
  }
  for (const name of names.slice(0, 64)) {
    const dir = join(parent, name);
    try {
      const owner = Number.parseInt(readFileSync(join(dir, OWNER_FILE), 'utf8'), 10);
      if (Number.isInteger(owner) && owner > 0 && processAlive(owner)) continue;
    } catch {
      if (!unownedLongEnough(dir)) continue;
    }
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // Best effort, as the comment above says: a folder that cannot go stays.
    }
  }
}

/**
 * Confines pack code on Linux with bubblewrap and a host-side HTTP(S) proxy
 * (docs/sandbox.md, "Confinement"; API in packages/sandbox/README.md). Probes first, so that
 * `required` refuses before any pack code runs.
 */
export async function createConfinement(
  policy: ConfinementPolicy,
  options: CreateConfinementOptions,
): Promise<Confinement> {
  const mode = options?.mode;
  if (!MODES.has(mode)) throw policyError('mode must be required, auto or off');
  if (mode === 'off')
    return offConfinement(
      'off',
      GUARANTEE_IDS.map((id) => ({ id, status: 'unavailable', reason: 'isolation is off' })),
    );
  const resolved = await resolvePolicy(policy, options.readOnlyPaths);
  const outcome = await (options.probe ?? probeIsolation(options));
  const guarantees = statuses(outcome);
  const missing = guarantees.filter((g) => g.status === 'unavailable');
  if (mode === 'required' && missing.length > 0)
    throw new SandboxError(
      'ERR_ISOLATION_UNAVAILABLE',
      `isolation is required but ${missing.map((g) => g.id).join(', ')} cannot be enforced: ` +
        `${missing[0]!.reason}`,
    );
  if (outcome.level === 'none') return offConfinement('auto', guarantees);
  assertRuntimeOutOfSight(resolved, options.runtimeParent ?? tmpdir());
  return startConfinement(mode, resolved, outcome, guarantees, options);
}

async function startConfinement(
  mode: 'required' | 'auto',
  policy: ResolvedPolicy,
  outcome: Exclude<ProbeOutcome, { level: 'none' }>,
  guarantees: GuaranteeStatus[],
  options: CreateConfinementOptions,
): Promise<Confinement> {
  let runtimeDir: string;
  if (options.runtimeParent !== undefined) await sweepStaleRuntimes(options.runtimeParent);
  try {
    runtimeDir = mkdtempSync(join(options.runtimeParent ?? tmpdir(), RUNTIME_PREFIX));
    writeFileSync(join(runtimeDir, OWNER_FILE), String(process.pid), { mode: 0o600 });
  } catch (error) {
    throw new SandboxError('ERR_ISOLATION_SETUP', 'cannot create the confinement folder', {
      cause: error,
    });
  }
  const envDir = join(runtimeDir, 'env');
  const hostRuntime = join(runtimeDir, 'run');
  const privateDir = join(runtimeDir, 'private');
  let proxy: HostProxy | undefined;
  let modelOrigin: AllowedOrigin | undefined;
  // Origins admitted for a while (a turn's model gateway), counted: each admission has its release.
  const admitted = new Map<string, { origin: AllowedOrigin; holders: number }>();
  const allowedNow = (): AllowedOrigin[] => [
    ...policy.allowed,
    ...(modelOrigin ? [modelOrigin] : []),
    ...[...admitted.values()].map((entry) => entry.origin),
  ];
  try {
    mkdirSync(envDir, { mode: 0o700 });
    mkdirSync(hostRuntime, { mode: 0o700 });
    mkdirSync(privateDir, { mode: 0o700 });
    writeFileSync(join(hostRuntime, 'relay.mjs'), RELAY_SOURCE, { mode: 0o400 });
    writeFileSync(join(hostRuntime, 'relay.pl'), RELAY_PERL_SOURCE, { mode: 0o400 });
    if (outcome.level === 'full')
      proxy = await startHostProxy(join(hostRuntime, 'proxy.sock'), {
        allowed: allowedNow,
        ...(options.now ? { now: options.now } : {}),
      });
  } catch (error) {
    await rm(runtimeDir, { recursive: true, force: true });
    throw new SandboxError('ERR_ISOLATION_SETUP', 'cannot start the confinement proxy', {
      cause: error,
    });
  }

  const relay =
    options.relay === 'node' || (options.relay !== 'perl' && !existsSync('/usr/bin/perl'))
      ? outcome.nodeBinary
      : 'perl';
  let closed = false;
  // Every per-command environment folder made and not yet removed, with the file written in it.
  const envFolders = new Map<string, WrittenFile>();
  const proxyUrl = `http://127.0.0.1:${RELAY_PORT}`;
  const wrap = (command: WrappableCommand): WrappableCommand => {
    if (closed) throw new SandboxError('ERR_ISOLATION_CLOSED', 'this confinement is closed');
    const env: Record<string, string> = { ...command.env };
    if (proxy)
      for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy'])
        env[name] = proxyUrl;
    const script = environmentScript(env);
    if (typeof script !== 'string')
      throw policyError(
        `the environment variable name ${JSON.stringify(script.badName)} cannot be passed`,
      );
    // Each command sees only its own one-use environment file, in a folder of its own: in a
    // folder shared by every sandbox of this confinement, a confined process (another session's)
    // could read another command's variables (its model token, turnEnv) or rewrite them before
    // the launcher sources them. Folders whose file was used are removed as new ones are made.
    sweepUsedEnvFolders(envFolders);
    const commandEnvDir = join(envDir, randomUUID());
    // Synchronous because the wrapper is: the file exists before the command can start.
    mkdirSync(commandEnvDir, { mode: 0o700 });
    const envFile = join(commandEnvDir, ENV_FILE);
    writeFileSync(envFile, script, { mode: 0o600, flag: 'wx' });
    // Nothing else writes this folder before the command starts, so what is there is ours.
    envFolders.set(commandEnvDir, identityOf(envFile)!);
    const args = buildSandboxArgs({
      systemMounts: outcome.systemMounts,
      packDir: policy.packDir,
      workspace: policy.workspace,
      // A command's turn may narrow the walls (a read-only turn of a workspace-write pack), never
      // widen them.
      workspaceWritable: policy.workspaceWritable && writesWorkspace(command.fileAccess),
      engineStateDir: policy.engineStateDir,
      readOnlyPaths: policy.readOnlyPaths,
      // The small folders first: the walk has a budget, and the workspace can be large.
      maskedSockets: findSockets([
        policy.packDir,
        policy.engineStateDir,
        ...policy.readOnlyPaths,
        policy.workspace,
      ]),
      runtimeDir: hostRuntime,
      envDir: commandEnvDir,
      cwd: command.cwd,
    });
    return {
      file: outcome.bwrapPath,
      args: [
        ...args,
        '--',
        outcome.shell,
        '-c',
        LAUNCH_SCRIPT,
        'packwarden-launch',
        `${SANDBOX_ENV_DIR}/${ENV_FILE}`,
        relay,
        proxy ? String(RELAY_PORT) : '0',
        command.file,
        ...command.args,
      ],
      cwd: command.cwd,
      // bwrap runs on the host: it gets no variable the pack could influence (LD_PRELOAD…).
      env: {},
    };
  };
  const originOf = (origin: string): AllowedOrigin => {
    let parsed: URL;
    try {
      parsed = new URL(origin);
    } catch (error) {
      throw policyError('the model origin is not a URL', error);
    }
    return parseAllowedOrigin(parsed.origin);
  };
  return {
    mode,
    guarantees,
    privateDir,
    wrap,
    proxyEvents: proxy ? proxy.events : [],
    allowModelOrigin(origin: string) {
      modelOrigin = originOf(origin);
      proxy?.revalidate();
    },
    admitOrigin(origin: string) {
      const parsed = originOf(origin);
      const key = new URL(origin).origin;
      const entry = admitted.get(key) ?? { origin: parsed, holders: 0 };
      entry.holders += 1;
      admitted.set(key, entry);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        entry.holders -= 1;
        if (entry.holders === 0 && admitted.get(key) === entry) {
          admitted.delete(key);
          // Tunnels opened while it was admitted end with the admission.
          proxy?.revalidate();
        }
      };
    },
    async close() {
      if (closed) return;
      closed = true;
      await proxy?.close();
      await rm(runtimeDir, { recursive: true, force: true });
    },
  };
}
