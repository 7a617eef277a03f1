import { lstatSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CliError, EXIT } from '../../errors.js';
import { printJson, terminalSafe as safe, type CliIo } from '../../io.js';
import { loadLock } from '../../shared/lockfile.js';
import { trustFlagsGiven, type TrustFlags } from '../../shared/trust.js';

interface DriftRow {
  key: string;
  status: 'ok' | 'drifted' | 'missing' | 'unlocked' | 'unreadable';
  dir?: string | undefined;
  version?: string | undefined;
  locked?: string | undefined;
  actual?: string | undefined;
  message?: string | undefined;
}

/**
 * An engine the lock records, as `loadPackEngine` finds it in `$PACKWARDEN_HOME/engines/<id>/`
 * (`findInstalledEngine`), against the lock: the version `current.txt` names and the engine
 * digest (Pack digest v1 without the root `engine.sig`, what its install recorded). A folder
 * that would load without being a version (an engine placed at `engines/<id>/` itself), or a
 * root `pack.sig` (which no engine digest covers), is drift.
 */
async function checkInstalledEngine(
  io: CliIo,
  key: string,
  locked: { version: string; packDigest: string },
): Promise<DriftRow> {
  const [{ findInstalledEngine }, { computePackDigest, digestManifest }, { packwardenHome }] =
    await Promise.all([
      import('@packwarden/engines/installed'),
      import('@packwarden/pack-digest'),
      import('@packwarden/pack-manifest/resolve'),
    ]);
  const row = { key, locked: locked.packDigest };
  let found;
  try {
    found = await findInstalledEngine(packwardenHome(io.env), key.slice('engine/'.length));
  } catch (error) {
    return { ...row, status: 'unreadable', message: (error as Error).message };
  }
  if (found === undefined) return { ...row, status: 'missing' };
  const base = { ...row, dir: found.folder, version: found.version };
  if (found.version !== locked.version) {
    return {
      ...base,
      status: 'drifted',
      message:
        found.version === undefined
          ? `an engine at ${found.folder} itself loads instead of the installed ${locked.version}`
          : `installed version ${found.version}, the lock records ${locked.version}`,
    };
  }
  try {
    if (somethingAt(join(found.folder, 'pack.sig'))) {
      return {
        ...base,
        status: 'drifted',
        message: 'a root pack.sig, which no engine digest covers',
      };
    }
    const { entries } = await computePackDigest(found.folder);
    const actual = digestManifest(entries.filter((entry) => entry.path !== 'engine.sig'));
    return { ...base, status: actual === locked.packDigest ? 'ok' : 'drifted', actual };
  } catch (error) {
    return { ...base, status: 'unreadable', message: (error as Error).message };
  }
}

/** Anything at `path`, a dangling symlink included (pack-signature's `hasRootPackSignature` test). */
function somethingAt(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

interface InstalledFlags extends TrustFlags {
  lock?: string;
  json?: boolean;
  all?: string;
  requireSigned?: boolean;
}

/**
 * `--installed` compares content with the lock and checks no signature: packs named beside it,
 * `--all`, `--require-signed` and the trust-root flags would be ignored, and a CI step asking for
 * signatures would pass on a drift check alone. Each is refused (exit 2), never dropped.
 */
function refuseIgnoredFlags(flags: InstalledFlags, refs: readonly string[]): void {
  const ignored = [
    refs.length > 0 ? `the packs named (${refs.join(' ')})` : undefined,
    flags.all !== undefined ? '--all' : undefined,
    flags.requireSigned === true ? '--require-signed' : undefined,
    ...trustFlagsGiven(flags),
  ].filter((flag) => flag !== undefined);
  if (ignored.length === 0) return;
  throw new CliError(
    `pack verify --installed compares installed content with the lock and checks no signature: ${ignored.join(', ')} would be ignored`,
    EXIT.usage,
    'run `pack verify --installed --lock FILE` and `pack verify <packs…> | --all DIR` with the trust-root flags as two steps',
  );
}

/**
 * `pack verify --installed --lock FILE`: recomputes the pack digest of every installed pack
 * (workspace and $PACKWARDEN_HOME, apps/cli/README.md "Naming a pack") and compares it with the
 * lock's `packDigest`. Installs record no digest of their own, so the lock is required: without
 * one nothing could be compared, and "could not check" is never reported as "no drift".
 * Exit 1 when a locked pack drifted, is missing, is at another version or cannot be read.
 */
export async function packVerifyInstalled(
  io: CliIo,
  flags: InstalledFlags,
  refs: readonly string[] = [],
): Promise<number> {
  refuseIgnoredFlags(flags, refs);
  if (flags.lock === undefined)
    throw new CliError(
      'pack verify --installed needs --lock FILE: installs record no digest to compare with',
      EXIT.usage,
      'install with --lock packwarden.lock, then verify with --lock packwarden.lock',
    );
  const file = resolve(io.cwd, flags.lock);
  const lock = await loadLock(file, true);
  const { listInstalledPacks } = await import('@packwarden/pack-manifest/resolve');
  const { computePackDigest } = await import('@packwarden/pack-digest');
  const installed = await listInstalledPacks({ cwd: io.cwd, env: io.env });
  const rows: DriftRow[] = [];
  const seen = new Set<string>();
  for (const pack of installed) {
    const key = `pack/${pack.name}`;
    const locked = lock.packs[key];
    if (!locked) {
      rows.push({ key, status: 'unlocked', dir: pack.dir });
      continue;
    }
    seen.add(key);
    if (
      pack.problem !== undefined ||
      (pack.version !== undefined && pack.version !== locked.version)
    ) {
      rows.push({
        key,
        status: 'drifted',
        dir: pack.dir,
        version: pack.version,
        message:
          pack.problem ?? `installed version ${pack.version}, the lock records ${locked.version}`,
      });
      continue;
    }
    try {
      const { digest } = await computePackDigest(pack.dir);
      rows.push({
        key,
        status: digest === locked.packDigest ? 'ok' : 'drifted',
        dir: pack.dir,
        version: locked.version,
        locked: locked.packDigest,
        actual: digest,
      });
    } catch (error) {
      rows.push({ key, status: 'unreadable', dir: pack.dir, message: (error as Error).message });
    }
  }
  // Engines (`store install engine/<id> --lock`): the folder the engine loader takes for the id,
  // checked by the engine digest its install recorded. They used to be reported `missing` however
  // they were installed, and never checked.
  for (const key of Object.keys(lock.packs).sort()) {
    if (seen.has(key) || !key.startsWith('engine/')) continue;
    seen.add(key);
    rows.push(await checkInstalledEngine(io, key, lock.packs[key]!));
  }
  for (const key of Object.keys(lock.packs).sort())
    if (!seen.has(key)) rows.push({ key, status: 'missing', locked: lock.packs[key]!.packDigest });
  const failed = rows.some((row) => row.status !== 'ok' && row.status !== 'unlocked');
  if (flags.json) {
    printJson(io, { lock: file, ok: !failed, packs: rows });
    return failed ? EXIT.failure : EXIT.ok;
  }
  for (const row of rows) {
    const detail =
      row.status === 'drifted' && row.actual
        ? `: digest ${row.actual}, the lock records ${row.locked}`
        : row.message
          ? `: ${row.message}`
          : '';
    io.stdout.write(
      `${row.status.padEnd(10)} ${safe(row.key)}${row.dir ? `  ${safe(row.dir)}` : ''}${safe(detail)}\n`,
    );
  }
  io.stdout.write(
    failed
      ? `drift found (checked against ${safe(file)})\n`
      : `no drift (checked against ${safe(file)})\n`,
  );
  return failed ? EXIT.failure : EXIT.ok;
}
