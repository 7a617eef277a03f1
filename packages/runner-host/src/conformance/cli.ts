#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { conformanceCases } from './cases.js';
import { runConformance } from './runner.js';
import type { ConformanceTarget } from './peer.js';
import { MAX_SOCKET_PATH_BYTES } from '../socket-path.js';

const USAGE = `usage: packwarden-runner-conformance (--stdio "<command line>" | --socket PATH [--host-pid PID])
         [--only NAME]... [--timeout-ms N] [--cancel-timeout-ms N] [--json]
       packwarden-runner-conformance --list [--json]

--only NAME runs the cases whose name contains NAME (repeatable); a NAME that matches no case is
a usage error. --list prints the case names and runs nothing.

With --socket, the last case kills the host: by SIGKILL to --host-pid when given, otherwise
through the scripted engine's crash step (which reaches the host only when the engine runs in it).

The host under test must load createScriptedTestEngine() from @packwarden/runner-host/conformance
as its default engine. Prints one line per case; exits 1 if any case fails, 2 on usage errors.`;

/** The conformance CLI; returns the exit code. */
export async function main(argv: readonly string[], out: NodeJS.WritableStream): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        stdio: { type: 'string' },
        socket: { type: 'string' },
        'host-pid': { type: 'string' },
        only: { type: 'string', multiple: true },
        'timeout-ms': { type: 'string' },
        'cancel-timeout-ms': { type: 'string' },
        json: { type: 'boolean' },
        list: { type: 'boolean' },
        help: { type: 'boolean' },
      },
    }));
  } catch (error) {
    out.write(`${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help === true) {
    out.write(`${USAGE}\n`);
    return 0;
  }
  if (values.list === true) {
    const names = conformanceCases.map((c) => c.name);
    out.write(
      values.json === true
        ? `${JSON.stringify({ version: 1, cases: names })}\n`
        : `${names.join('\n')}\n`,
    );
    return 0;
  }
  // A filter that selects nothing would print "0 passed, 0 failed" and exit 0: a run that
  // checked nothing must not look like a pass.
  const unmatched = (values.only ?? []).filter(
    (only) => !conformanceCases.some((c) => c.name.includes(only)),
  );
  if (unmatched.length > 0) {
    out.write(
      `no case matches --only ${unmatched.map((only) => JSON.stringify(only)).join(', ')}; --list prints the case names\n${USAGE}\n`,
    );
    return 2;
  }
  if ((values.stdio === undefined) === (values.socket === undefined)) {
    out.write(`give exactly one of --stdio and --socket\n${USAGE}\n`);
    return 2;
  }
  // A path the kernel would cut is refused here, as every connect would be: one usage error, not
  // every case failing with the same ERR_SOCKET_PATH.
  if (values.socket !== undefined && Buffer.byteLength(values.socket) > MAX_SOCKET_PATH_BYTES) {
    out.write(
      `--socket ${values.socket} is ${Buffer.byteLength(values.socket)} bytes long, over the ${MAX_SOCKET_PATH_BYTES} bytes a unix socket path may have; use a shorter path\n${USAGE}\n`,
    );
    return 2;
  }
  const hostPidText = values['host-pid'];
  const hostPid = hostPidText === undefined ? undefined : Number(hostPidText);
  if (
    hostPid !== undefined &&
    (values.socket === undefined || !Number.isSafeInteger(hostPid) || hostPid <= 1)
  ) {
    out.write(`--host-pid takes a process id (above 1) and goes with --socket\n${USAGE}\n`);
    return 2;
  }
  const target: ConformanceTarget =
    values.stdio !== undefined
      ? { stdio: values.stdio }
      : {
          socket: values.socket as string,
          ...(hostPid !== undefined
            ? { killHost: () => void process.kill(hostPid, 'SIGKILL') }
            : {}),
        };
  const timeouts: { timeoutMs?: number; cancelTimeoutMs?: number } = {};
  for (const [flag, key] of [
    ['timeout-ms', 'timeoutMs'],
    ['cancel-timeout-ms', 'cancelTimeoutMs'],
  ] as const) {
    const text = values[flag];
    if (text === undefined) continue;
    if (!/^[1-9][0-9]{0,8}$/.test(text)) {
      out.write(`--${flag} takes a whole number of milliseconds from 1 to 999999999\n${USAGE}\n`);
      return 2;
    }
    timeouts[key] = Number(text);
  }
  const report = await runConformance(target, {
    ...(values.only !== undefined ? { only: values.only } : {}),
    ...timeouts,
    onResult: (result) => {
      if (values.json === true) return;
      const detail = result.detail !== undefined ? ` — ${result.detail}` : '';
      out.write(`${result.ok ? 'ok  ' : 'FAIL'} ${result.name} (${result.ms} ms)${detail}\n`);
    },
  });
  if (values.json === true) out.write(`${JSON.stringify({ version: 1, ...report })}\n`);
  else {
    const failed = report.results.filter((r) => !r.ok).length;
    out.write(`${report.results.length - failed} passed, ${failed} failed\n`);
  }
  return report.ok ? 0 : 1;
}

void main(process.argv.slice(2), process.stdout).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(
      `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 2;
  },
);
