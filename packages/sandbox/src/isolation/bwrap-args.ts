import { lstatSync, readdirSync, readlinkSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { typedEntry, type TypedEntry } from '@packwarden/pack-manifest/fs';

/**
 * What of the host a sandbox sees (docs/sandbox.md, "Confinement"): the system directories
 * read-only, the pieces of /etc that name resolution, TLS and user lookup need, the node
 * installation the launcher runs on, and exactly the three folders of the policy.
 */
export const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
export const ETC_ENTRIES = [
  '/etc/alternatives',
  '/etc/ca-certificates',
  '/etc/crypto-policies',
  '/etc/gai.conf',
  '/etc/group',
  '/etc/host.conf',
  '/etc/hosts',
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/localtime',
  '/etc/nsswitch.conf',
  '/etc/passwd',
  '/etc/pki',
  '/etc/resolv.conf',
  '/etc/ssl',
];

/** The flags that make every namespace new and the child powerless over its own sandbox. */
export const NAMESPACE_FLAGS = [
  '--unshare-all',
  '--unshare-user',
  '--disable-userns',
  '--cap-drop',
  'ALL',
  '--die-with-parent',
  '--new-session',
  '--hostname',
  'sandbox',
] as const;

export type SystemMount =
  { kind: 'ro-bind'; path: string } | { kind: 'symlink'; path: string; target: string };

/** Looks at the host once: which system dirs exist, and which are merged-/usr symlinks. */
export function discoverSystemMounts(nodeBinary: string): SystemMount[] {
  const mounts: SystemMount[] = [];
  for (const path of [...SYSTEM_DIRS, ...ETC_ENTRIES]) {
    let stat;
    try {
      stat = lstatSync(path);
    } catch {
      continue;
    }
    if (stat.isSymbolicLink() && SYSTEM_DIRS.includes(path))
      mounts.push({ kind: 'symlink', path, target: readlinkSync(path) });
    else mounts.push({ kind: 'ro-bind', path });
  }
  const covered = SYSTEM_DIRS.some((dir) => nodeBinary.startsWith(dir + sep));
  if (!covered) mounts.push(...nodeInstallationMounts(nodeBinary));
  return mounts;
}

/**
 * A node outside the system dirs (nvm, volta, a tarball in /opt or `~/.local`, a lone binary in
 * `~/bin`): the binary itself and, for an installation laid out as `<prefix>/bin/node`, its
 * global packages (`<prefix>/lib/node_modules`: npm, corepack) with the links to them in
 * `<prefix>/bin`, all read-only, and nothing else of the prefix: the prefix itself may be a
 * folder full of the user's own files (`~/.local`, or the home folder for `~/bin/node`).
 */
function nodeInstallationMounts(nodeBinary: string): SystemMount[] {
  const mounts: SystemMount[] = [{ kind: 'ro-bind', path: nodeBinary }];
  const bin = dirname(nodeBinary);
  const modules = join(dirname(bin), 'lib', 'node_modules');
  if (basename(bin) !== 'bin' || !isFolder(modules)) return mounts;
  mounts.push({ kind: 'ro-bind', path: modules });
  let names: string[];
  try {
    names = readdirSync(bin);
  } catch {
    return mounts;
  }
  for (const name of names.slice(0, 256)) {
    const path = join(bin, name);
    try {
      if (!lstatSync(path).isSymbolicLink()) continue;
      const target = readlinkSync(path);
      const rel = relative(modules, resolve(bin, target));
      if (rel !== '' && !rel.startsWith('..') && !isAbsolute(rel))
        mounts.push({ kind: 'symlink', path, target });
    } catch {
      // Gone meanwhile: nothing to show.
    }
  }
  return mounts;
}

function isFolder(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

export interface SandboxArgsInput {
  systemMounts: readonly SystemMount[];
  packDir: string;
  workspace: string;
  workspaceWritable: boolean;
  engineStateDir: string;
  /** Extra host paths bound read-only at the same path. */
  readOnlyPaths: readonly string[];
  /** Unix sockets inside the visible folders, hidden behind `/dev/null`. */
  maskedSockets: readonly string[];
  /** Host folder bound read-only at `/run/packwarden` (launcher, proxy socket). */
  runtimeDir: string;
  /** Host folder bound writable at `/run/packwarden-env` (one-use environment files). */
  envDir: string;
  cwd: string;
}

/**
 * Unix sockets that already exist inside the folders a sandbox sees (a sandbox's own frame
 * socket in its state folder, an agent socket in a workspace) would be a way out of the
 * `network` guarantee: each one found is covered with `/dev/null` (connecting then fails).
 * The scan is bounded (four levels, `maxEntries` entries); a socket created later, or deeper,
 * is not covered: keep sockets out of the workspace and the engine state folder.
 */
export function findSockets(roots: readonly string[], maxEntries = 4096): string[] {
  const found: string[] = [];
  let budget = maxEntries;
  const walk = (dir: string, depth: number): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const dirent of entries) {
      if (budget-- <= 0) return;
      const path = join(dir, dirent.name);
      // A socket on a file system whose readdir gives no types (DT_UNKNOWN) is found by lstat.
      let entry: TypedEntry;
      try {
        entry = typedEntry(dir, dirent);
      } catch {
        continue;
      }
      if (entry.isSocket()) found.push(path);
      else if (entry.isDirectory() && depth < 4) walk(path, depth + 1);
    }
  };
  for (const root of roots) walk(root, 1);
  return found;
}

export const SANDBOX_RUNTIME_DIR = '/run/packwarden';
export const SANDBOX_ENV_DIR = '/run/packwarden-env';

function depth(path: string): number {
  return path.split('/').filter(Boolean).length;
}

/** The bwrap arguments before `--` (pure: the same input, the same sandbox). */
export function buildSandboxArgs(input: SandboxArgsInput): string[] {
  const args: string[] = [...NAMESPACE_FLAGS];
  for (const mount of input.systemMounts) {
    if (mount.kind === 'symlink') args.push('--symlink', mount.target, mount.path);
    else args.push('--ro-bind-try', mount.path, mount.path);
  }
  args.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--tmpfs', '/run');
  // Deeper paths are mounted later, so a folder nested in another keeps its own mode
  // (a pack copy inside a writable workspace stays read-only, and the other way round).
  const policyMounts = [
    { path: input.packDir, flag: '--ro-bind' },
    { path: input.workspace, flag: input.workspaceWritable ? '--bind' : '--ro-bind' },
    { path: input.engineStateDir, flag: '--bind' },
    ...input.readOnlyPaths.map((path) => ({ path, flag: '--ro-bind' })),
  ].sort((a, b) => depth(a.path) - depth(b.path));
  for (const mount of policyMounts) args.push(mount.flag, mount.path, mount.path);
  for (const socket of input.maskedSockets) args.push('--ro-bind', '/dev/null', socket);
  args.push('--ro-bind', input.runtimeDir, SANDBOX_RUNTIME_DIR);
  args.push('--bind', input.envDir, SANDBOX_ENV_DIR);
  args.push('--chdir', input.cwd);
  return args;
}
