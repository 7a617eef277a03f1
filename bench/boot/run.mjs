// bench/boot: sandbox boot as a control plane pays it on every session. `packwarden sandbox
// --stdio --require-signed-pack` on the example pack (signed in a temp copy with a temp key, the
// trust root in PACKWARDEN_PACK_SIGNING_KEYS), timed from spawn to the `welcome` frame, next to
// `node -e 0` in the same environment, in interleaved rounds.
//   node bench/boot/run.mjs [--runs N] [--cpu-prof DIR] [--cli PATH]
// --cpu-prof DIR writes one V8 CPU profile of a boot (after the timed rounds) to DIR, sampled
// every PW_PROF_INTERVAL µs (default 1000; 50 shows module loading); --cli runs
// another build of the CLI (default apps/cli/dist/bin.cjs, built when missing).
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  cliBin,
  ensureBuilt,
  fmtMs,
  folderCreationMicros,
  repoRoot,
  verdict,
  watchCpuTime,
} from '../lib.mjs';

const flag = (name) => {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
};
const runs = Number(flag('--runs') || 15) || 15;
const profileDir = flag('--cpu-prof');
const bin = flag('--cli') === undefined ? cliBin : resolve(flag('--cli'));
const TARGET = 3;
// A boot that has not said welcome by then is broken, not slow.
const BOOT_TIMEOUT_MS = 60_000;

if (flag('--cli') === undefined) ensureBuilt();
const work = mkdtempSync(join(tmpdir(), 'pw-bench-boot-'));

/**
 * Spawns a sandbox and resolves with the time to its `welcome` frame (the handshake is the
 * driver's `hello`, sent at spawn), then shuts the session down, untimed, and waits for the exit.
 */
function bootOnce(env, stateDir, nodeArgs = []) {
  return new Promise((resolveBoot, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn(
      process.execPath,
      [
        ...nodeArgs,
        bin,
        'sandbox',
        '--stdio',
        '--require-signed-pack',
        '--agent',
        join(work, 'hello-pack'),
        '--state-dir',
        stateDir,
      ],
      { env, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    let welcomeMs;
    const timer = setTimeout(() => child.kill('SIGKILL'), BOOT_TIMEOUT_MS);
    // A sandbox that dies at boot closes stdin: its exit and stderr below say why, not an EPIPE.
    child.stdin.on('error', () => {});
    child.stdin.write(`${JSON.stringify({ type: 'hello', protocols: [1] })}\n`);
    child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
    child.stdout.setEncoding('utf8').on('data', (chunk) => {
      stdout += chunk;
      if (welcomeMs !== undefined) return;
      for (const line of stdout.split('\n').slice(0, -1)) {
        if (JSON.parse(line).type !== 'welcome') continue;
        welcomeMs = Number(process.hrtime.bigint() - start) / 1e6;
        child.stdin.end(`${JSON.stringify({ type: 'shutdown' })}\n`);
        break;
      }
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (welcomeMs === undefined)
        reject(new Error(`sandbox exited ${code ?? signal} without welcome:\n${stderr}`));
      else resolveBoot(welcomeMs);
    });
  });
}

function nodeOnce(env) {
  return new Promise((resolveRun, reject) => {
    const start = process.hrtime.bigint();
    // The sandbox's environment: Node's start-up depends on it (NODE_EXTRA_CA_CERTS, lib.mjs).
    const child = spawn(process.execPath, ['-e', '0'], { env, stdio: 'ignore' });
    child.on('close', (code) =>
      code === 0
        ? resolveRun(Number(process.hrtime.bigint() - start) / 1e6)
        : reject(new Error(`node -e 0 exited ${code}`)),
    );
  });
}

try {
  // The example pack, signed in a temp copy with a temp key; the trust root comes from the
  // environment, as a control plane would hand it to the sandbox.
  cpSync(join(repoRoot, 'examples', 'hello-pack'), join(work, 'hello-pack'), { recursive: true });
  const cli = (...args) =>
    execFileSync(process.execPath, [bin, ...args], { cwd: work, encoding: 'utf8' });
  const key = JSON.parse(
    cli('pack', 'keygen', '--kid', 'bench', '-o', join(work, 'key.pem'), '--json'),
  );
  cli('pack', 'sign', join(work, 'hello-pack'), '--key', join(work, 'key.pem'), '--kid', 'bench');
  const env = {
    PATH: process.env.PATH,
    HOME: join(work, 'home'),
    PACKWARDEN_PACK_SIGNING_KEYS: JSON.stringify({ bench: key.publicKeyPem }),
  };
  mkdirSync(env.HOME);
  // With this environment's NODE_EXTRA_CA_CERTS (as a control plane on this machine would pass
  // it on), and without: Node parses the file at every start (lib.mjs, envWithoutExtraCaCerts).
  const environments = [
    ...(process.env.NODE_EXTRA_CA_CERTS === undefined
      ? []
      : [
          {
            label: ', NODE_EXTRA_CA_CERTS set',
            env: { ...env, NODE_EXTRA_CA_CERTS: process.env.NODE_EXTRA_CA_CERTS },
          },
        ]),
    { label: process.env.NODE_EXTRA_CA_CERTS === undefined ? '' : ', unset', env },
  ];

  // A fresh state dir per boot (made untimed): every boot copies and verifies the pack. They are
  // all removed at the end, not after each boot (folderCreationMicros in lib.mjs says why).
  let boots = 0;
  const freshState = () => {
    const dir = join(work, `state-${boots++}`);
    mkdirSync(dir);
    return dir;
  };
  const round = async () => {
    const timings = [];
    for (const { env: bootEnv } of environments) {
      const baseline = await nodeOnce(bootEnv);
      const state = freshState();
      const boot = await bootOnce(bootEnv, state);
      timings.push({ baseline, boot });
    }
    return timings;
  };

  console.log(
    `bench/boot on ${availableParallelism()} cores (load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(
        ' ',
      )}), Node ${process.version}, medians of ${runs} interleaved rounds after a warm-up round\n`,
  );
  const cpuTime = watchCpuTime();
  const creating = folderCreationMicros(work);
  await round();
  const samples = [];
  for (let i = 0; i < runs; i++) samples.push(await round());
  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  environments.forEach(({ label }, e) => {
    const these = samples.map((timings) => timings[e]);
    const baselineMs = median(these.map((s) => s.baseline));
    const bootMs = median(these.map((s) => s.boot));
    const ratio = median(these.map((s) => s.boot / s.baseline));
    console.log(
      `${e > 0 ? '\n' : ''}Sandbox boot, example pack, --require-signed-pack, spawn to welcome${label}`,
    );
    console.log(`    node -e 0                              ${fmtMs(baselineMs)}`);
    console.log(
      `    packwarden sandbox --stdio             ${fmtMs(bootMs)}   ${ratio.toFixed(2)}×  ${verdict(ratio, TARGET)}`,
    );
  });

  console.log(
    `\nMaking a folder in ${tmpdir()}: ${creating.toFixed(0)} µs before the rounds, ${folderCreationMicros(work).toFixed(0)} µs after (each boot makes ~50 files and folders; slow when files were deleted there in the last minutes)`,
  );
  const spent = cpuTime();
  if (spent !== undefined) console.log(spent);

  if (profileDir !== undefined) {
    const dir = resolve(profileDir);
    mkdirSync(dir, { recursive: true });
    await bootOnce(env, freshState(), [
      '--cpu-prof',
      '--cpu-prof-interval',
      process.env.PW_PROF_INTERVAL ?? '1000',
      '--cpu-prof-dir',
      dir,
    ]);
    console.log(`\nCPU profile of one boot written to ${dir}`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
