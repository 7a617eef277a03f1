import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { CommandWrapper } from './command-wrapper.js';
import type { TurnFileAccess } from './permissions.js';

/** Stands for the SDK's own arguments in the command handed to the wrapper. */
const ARGS_MARK = '\u0000packwarden-codex-args\u0000';

/** A POSIX shell word for `value` (single quotes; a quote becomes `'\''`). */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** Where the SDK would start codex from, as it resolved it (`Codex#exec`), when it can be read. */
export function sdkCodexPath(
  instance: unknown,
): { executablePath: string; pathDirs: string[] } | undefined {
  const exec = (instance as { exec?: { executablePath?: unknown; pathDirs?: unknown } }).exec;
  if (typeof exec?.executablePath !== 'string' || exec.executablePath === '') return undefined;
  const pathDirs = Array.isArray(exec.pathDirs)
    ? exec.pathDirs.filter((dir): dir is string => typeof dir === 'string')
    : [];
  return { executablePath: exec.executablePath, pathDirs };
}

/**
 * The Codex SDK spawns its CLI itself and has no spawn hook, so confinement reaches it through a
 * launcher (engines README, "Confinement of the CLIs"): the wrapper rewrites `codex <mark>` once
 * per turn, and a shell script (mode 0700, removed after the turn) runs that command with the
 * SDK's arguments in place of the mark. The environment stays the SDK's (the wrapped one, which
 * the engine hands the SDK). No secret goes into the script: only the wrapper's program,
 * arguments and working directory.
 *
 * The host runs that script outside the walls, so it must live where confined code cannot
 * reach: `dir` is a folder the walls do not show (the sandbox's confinement `privateDir`);
 * without one, a new private folder under `os.tmpdir()`, removed with the script. Never the
 * engine state folder, which the walls make writable.
 */
export async function writeCodexLauncher(options: {
  wrap: CommandWrapper;
  codexPath: string;
  pathDirs: readonly string[];
  cwd: string;
  env: Record<string, string>;
  /** The turn's file access: the walls are never wider (`WrappableCommand.fileAccess`). */
  fileAccess?: TurnFileAccess;
  dir?: string;
}): Promise<{ path: string; env: Record<string, string>; remove: () => Promise<void> }> {
  const env = { ...options.env };
  // The SDK puts its bundled tools (rg) first on PATH only when it starts codex itself.
  if (options.pathDirs.length > 0)
    env.PATH = [...options.pathDirs, ...(env.PATH ?? '').split(delimiter).filter(Boolean)].join(
      delimiter,
    );
  const wrapped = options.wrap({
    file: options.codexPath,
    args: [ARGS_MARK],
    cwd: options.cwd,
    env,
    ...(options.fileAccess !== undefined ? { fileAccess: options.fileAccess } : {}),
  });
  const marks = wrapped.args.filter((arg) => arg === ARGS_MARK).length;
  if (marks !== 1 || wrapped.file.includes(ARGS_MARK)) {
    throw new Error('the command wrapper must keep the command arguments exactly once');
  }
  const words = [wrapped.file, ...wrapped.args].map((word) =>
    word === ARGS_MARK ? '"$@"' : shellQuote(word),
  );
  let dir = options.dir;
  let owned: string | undefined;
  if (dir === undefined) dir = owned = await mkdtemp(join(tmpdir(), 'pw-codex-'));
  else await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `codex-${randomBytes(8).toString('hex')}.sh`);
  await writeFile(
    path,
    `#!/bin/sh\ncd ${shellQuote(wrapped.cwd)} || exit 126\nexec ${words.join(' ')}\n`,
    { mode: 0o700, flag: 'wx' },
  );
  return {
    path,
    env: wrapped.env,
    remove: () => rm(owned ?? path, { recursive: owned !== undefined, force: true }),
  };
}
