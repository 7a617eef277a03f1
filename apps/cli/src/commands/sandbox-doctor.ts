import { runDoctor, type DoctorReport } from '@packwarden/sandbox';
import { printJson, terminalSafe, type CliIo } from '../io.js';

export interface SandboxDoctorFlags {
  json?: boolean;
}

/** `packwarden sandbox doctor` exits 8 when a guarantee is not enforced (docs/sandbox.md). */
export const ISOLATION_UNAVAILABLE_EXIT = 8;

const WIDTH = 'unavailable'.length;

/**
 * `packwarden sandbox doctor [--json]`: proves each confinement guarantee by attempting what it
 * forbids in a throwaway sandbox (docs/sandbox.md, "Confinement"). Exit 0 when all four are
 * enforced, 8 otherwise. `doctor` is injectable so tests can drive the rendering.
 */
export async function sandboxDoctor(
  io: CliIo,
  flags: SandboxDoctorFlags,
  doctor: (options: { env: CliIo['env'] }) => Promise<DoctorReport> = runDoctor,
): Promise<number> {
  const report = await doctor({ env: io.env });
  const allEnforced = report.guarantees.every((g) => g.status === 'enforced');
  if (flags.json === true) {
    printJson(io, { guarantees: report.guarantees });
  } else {
    for (const g of report.guarantees) {
      const detail = g.status === 'enforced' ? (g.by ?? '') : (g.reason ?? '');
      io.stdout.write(`${g.status.padEnd(WIDTH)}  ${g.id.padEnd(9)}  ${terminalSafe(detail)}\n`);
    }
    if (!allEnforced)
      io.stderr.write(
        'Some guarantees cannot be enforced here: `--isolation required` will refuse to run packs.\n' +
          'On Linux, install bubblewrap and allow unprivileged user namespaces; inside a container,\n' +
          'see "Confinement" in docs/sandbox.md.\n',
      );
  }
  return allEnforced ? 0 : ISOLATION_UNAVAILABLE_EXIT;
}
