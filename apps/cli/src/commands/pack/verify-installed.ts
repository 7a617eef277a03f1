import { resolve } from 'node:path';
import { CliError, EXIT } from '../../errors.js';
import { printJson, terminalSafe as safe, type CliIo } from '../../io.js';
import { loadLock } from '../../shared/lockfile.js';

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
 * `pack verify --installed --lock FILE`: recomputes the pack digest of every installed pack
 * (workspace and $PACKWARDEN_HOME, apps/cli/README.md "Naming a pack") and compares it with the
 * lock's `packDigest`. Installs record no digest of their own, so the lock is required: without
 * one nothing could be compared, and "could not check" is never reported as "no drift".
 * Exit 1 when a locked pack drifted, is missing, is at another version or cannot be read.
 */
export async function packVerifyInstalled(
  io: CliIo,
  flags: { lock?: string; json?: boolean },
): Promise<number> {
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
