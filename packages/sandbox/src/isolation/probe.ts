import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, realpathSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { discoverSystemMounts, NAMESPACE_FLAGS, type SystemMount } from './bwrap-args.js';
import { ISOLATION_LIMITS } from './limits.js';

/**
 * What this machine can enforce, found by trying it (docs/sandbox.md, "Confinement"): a
 * bubblewrap that exists is not enough, since user namespaces may be disabled by sysctl, by an
 * AppArmor policy, or because we already run in a container or sandbox that forbids nesting.
 */
export type ProbeOutcome =
  | (Sandboxable & { level: 'full' })
  | (Sandboxable & { level: 'shared-net'; networkReason: string })
  | { level: 'none'; reason: string };

export interface Sandboxable {
  bwrapPath: string;
  nodeBinary: string;
  /** `/bin/bash` when present (it can close leaked descriptors), else `/bin/sh`. */
  shell: string;
  systemMounts: SystemMount[];
}

export interface ProbeOptions {
  /** The bubblewrap binary. Default: `bwrap` looked up on `PATH` of `env`. */
  bwrapPath?: string;
  /** Where `PATH` comes from. Default `process.env`. */
  env?: Record<string, string | undefined>;
  /** The node binary the launcher runs on. Default `process.execPath`. */
  nodeBinary?: string;
  /** The platform. Default `process.platform` (a seam for the non-Linux answer). */
  platform?: NodeJS.Platform;
}

function findOnPath(name: string, path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

function tryBwrap(
  bwrapPath: string,
  args: string[],
): Promise<{ ok: true } | { ok: false; reason: string }> {
  return new Promise((resolve) => {
    let stderr = '';
    let child;
    try {
      child = spawn(bwrapPath, args, { stdio: ['ignore', 'ignore', 'pipe'], env: {} });
    } catch (error) {
      resolve({ ok: false, reason: `cannot start ${bwrapPath}: ${(error as Error).message}` });
      return;
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), ISOLATION_LIMITS.probeTimeoutMs);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < ISOLATION_LIMITS.probeStderrBytes) stderr += chunk;
    });
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ ok: false, reason: `cannot start ${bwrapPath}: ${error.message}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve({ ok: true });
      else {
        const said = stderr.trim().slice(0, ISOLATION_LIMITS.probeStderrBytes);
        resolve({
          ok: false,
          reason: `bubblewrap failed (${signal ?? `exit ${code}`})${said ? `: ${said}` : ''}`,
        });
      }
    });
  });
}

export async function probeIsolation(options: ProbeOptions = {}): Promise<ProbeOutcome> {
  const platform = options.platform ?? process.platform;
  if (platform !== 'linux')
    return {
      level: 'none',
      reason: `confinement uses bubblewrap, which exists only on Linux (this is ${platform})`,
    };
  const env = options.env ?? process.env;
  const found = options.bwrapPath ?? findOnPath('bwrap', env.PATH);
  if (found === undefined)
    return {
      level: 'none',
      reason:
        'bubblewrap (bwrap) is not on PATH: install it (Debian/Ubuntu: apt-get install bubblewrap)',
    };
  let bwrapPath: string;
  let nodeBinary: string;
  try {
    bwrapPath = realpathSync(found);
    nodeBinary = realpathSync(options.nodeBinary ?? process.execPath);
  } catch (error) {
    return { level: 'none', reason: `cannot resolve ${found}: ${(error as Error).message}` };
  }
  const systemMounts = discoverSystemMounts(nodeBinary);
  const mountArgs = systemMounts.flatMap((m) =>
    m.kind === 'symlink' ? ['--symlink', m.target, m.path] : ['--ro-bind-try', m.path, m.path],
  );
  const tail = [
    ...mountArgs,
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--tmpfs',
    '/tmp',
    '--',
    nodeBinary,
    '--version',
  ];
  const shell = existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';
  const full = await tryBwrap(bwrapPath, [...NAMESPACE_FLAGS, ...tail]);
  if (full.ok) return { level: 'full', bwrapPath, nodeBinary, shell, systemMounts };
  const sharedNet = await tryBwrap(bwrapPath, [...NAMESPACE_FLAGS, '--share-net', ...tail]);
  if (sharedNet.ok)
    return {
      level: 'shared-net',
      bwrapPath,
      nodeBinary,
      shell,
      systemMounts,
      networkReason: full.reason,
    };
  return { level: 'none', reason: full.reason };
}
